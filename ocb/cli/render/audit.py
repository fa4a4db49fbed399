"""Rendering ``ocb audit edge`` and ``ocb audit node`` as text: every change and its
cause (the JSON objects are ``ocb.wire``'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from replay.audit import Cause, EdgeAudit, NodeAudit


def _w(v: float | None) -> str:
    return "none" if v is None else f"{v:+.4f}"


def cause_text(c: Cause) -> str:
    at = f"seq {c.seq}"
    if c.kind == "outcome":
        head = f"{at}: outcome {c.reward:+g} from {c.reward_source or c.actor}"
        if c.trace_id:
            head += f" on trace {c.trace_id} (seq {c.trace_seq})"
        if c.query:
            head += f' for "{c.query}"'
        if c.chat_id:
            head += f" in chat {c.chat_id}"
        lines = [head]
        if c.path:
            lines.append("      path: " + "; ".join(c.path))
        elif c.fired_ids:
            lines.append("      fired: " + " -> ".join(c.fired_ids))
        return "\n".join(lines)
    if c.kind == "maintenance":
        params = ", ".join(f"{k}={v}" for k, v in sorted(c.params.items()))
        return f"{at}: maintenance {c.op} ({params})" + (f": {c.summary}" if c.summary else "")
    if c.kind == "injection":
        return f"{at}: {c.node_type} {c.node_id} injected: {c.content[:80]!r}"
    if c.kind == "teacher":
        return f"{at}: teacher {c.teacher} labelled hop {c.hop} at {c.node_id} ({c.query!r})"
    if c.kind == "sync":
        return f"{at}: file {c.file} {c.file_action} (version {c.content_hash[:12]})"
    if c.kind == "retraction":
        return f"{at}: {_retraction_text(c)}"
    return f"{at}: {c.type or c.kind} by {c.actor}"


def _retraction_text(c: Cause) -> str:
    what = f"{c.target_kind} at seq {c.target_seq}"
    if c.reward is not None:
        what += f" ({c.reward:+g} from {c.reward_source} on trace {c.trace_id or '-'})"
    elif c.node_id:
        what += f" ({c.node_id})"
    return f"retraction of the {what}" + (f": {c.reason!r}" if c.reason else "")


def edge_text(a: EdgeAudit) -> str:
    now = f"weight {_w(a.weight)} ({a.tier or a.kind})" if a.exists else "no longer exists"
    lines = [f"{a.source} -> {a.target}: {now}; {len(a.changes)} change(s) up to seq {a.as_of_seq}"]
    for c in a.changes:
        lines.append(f"  seq {c.seq} {c.ts}  {_w(c.before)} -> {_w(c.after)}  {c.rule} ({c.event})")
        lines.append("    cause " + cause_text(c.cause))
    return "\n".join(lines)


def node_text(a: NodeAudit) -> str:
    where = f"{a.path}#L{a.start_line}-L{a.end_line}" if a.path else "(injected)"
    state = f"{a.kind}, {a.authority}" if a.exists else "removed"
    lines = [f"{a.id}: {where} ({state})" + (f", alias of {a.alias_of}" if a.alias_of else "")]
    lines.append("life:")
    for e in a.life:
        extra = " ".join(
            x
            for x in (
                f"{e.path}#L{e.start_line}-L{e.end_line}" if e.path else "",
                f"version {e.content_hash[:12]}" if e.content_hash else "",
                f"with {e.other}" if e.other else "",
                e.detail,
            )
            if x
        )
        lines.append(f"  seq {e.seq} {e.ts}  {e.action}  {extra}".rstrip())
    if a.injections:
        lines.append("injections:")
        lines += ["  " + cause_text(c) for c in a.injections]
    lines.append(f"weight changes: {a.changes_out} out, {a.changes_in} in")
    if a.routes:
        lines.append("route credits:")
        for r in a.routes:
            if r.cause == "retraction":
                why = f"by retraction seq {r.cause_seq} (of seq {r.target_seq})"
            else:
                reward = f" {r.reward:+g}" if r.reward is not None else ""
                why = f"by outcome seq {r.cause_seq} ({r.trace_id}, {r.source}{reward})"
            lines.append(
                f'  seq {r.seq} {r.ts}  route {r.route} "{r.question}"  {r.delta:+.3f}  {why}'
            )
    if a.accesses:
        lines.append(
            f"fired by {a.accesses} quer{'y' if a.accesses == 1 else 'ies'} "
            f"({a.first_access} .. {a.last_access}); most recent:"
        )
        lines += [
            f"  seq {x.seq} {x.ts}  rank {x.rank}  {x.query!r}"
            + (f" (chat {x.chat_id})" if x.chat_id else "")
            + (f" ({x.route_mode} route {x.route})" if x.route else "")
            for x in a.recent
        ]
    else:
        lines.append("never fired")
    return "\n".join(lines)
