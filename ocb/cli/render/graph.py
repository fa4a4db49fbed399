"""Rendering the graph commands (``init``, ``query``, ``learn``, ``inject``) as text
(the JSON objects are ``ocb.wire``'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ocb.settings import ROUTE_RULES

if TYPE_CHECKING:
    from ocb.reports import Answer, InjectReport, LearnReport, SyncReport


def answer_text(a: Answer) -> str:
    head = (
        f"trace {a.trace_id or '(not recorded)'} · {len(a.fired)} fired · "
        f"{a.context_chars} chars · stop: {a.stop_reason}"
    )
    if a.route:
        head += f" · route {a.route} ({a.route_mode})"
        if a.route_question:
            head += f' of "{a.route_question}"'
    lines = [head]
    for i, h in enumerate(a.results, 1):
        mark = "" if h.fired else "  (not fired)"
        first = h.text.strip().splitlines()[0] if h.text.strip() else ""
        lines.append(f"{i:2d}. {h.score:.3f}  {h.source}  [{h.id}]{mark}")
        lines.append(f"    {first[:100]}")
    return "\n".join(lines)


def sync_text(r: SyncReport) -> str:
    moved = f"{r.files_moved} moved, " if r.files_moved else ""
    revised = f", {r.chunks_revised} revised" if r.chunks_revised else ""
    text = (
        f"indexed {r.files_indexed} new, {r.files_changed} changed, {moved}"
        f"{r.files_removed} removed file(s): "
        f"+{r.chunks_added} / -{r.chunks_removed} chunks{revised}, +{r.edges_created} edges "
        f"({r.events} events). brain: {r.nodes} nodes, {r.edges} edges."
        + (f" {len(r.secrets)} secret(s) redacted (see warnings)." if r.secrets else "")
    )
    if r.blobs_regenerated:
        text += f" regenerated {r.blobs_regenerated} lost vector blob(s)."
    return text


def learn_text(r: LearnReport) -> str:
    verb = "recorded" if r.recorded else "already recorded (nothing new)"
    head = f"outcome {r.reward:+g} ({r.source}, {r.rule}) {verb} at seq {r.outcome_seq}" + (
        f" for trace {r.trace_id}" if r.trace_id else ""
    )
    if r.rule in ROUTE_RULES:
        if not r.route:
            return head + ": the route already holds this"
        lines = [head + f": route {r.route}, {len(r.credits)} credit change(s)"]
        lines += [f"  {d:+.3f}  {n}" for n, d in sorted(r.credits.items())]
        return "\n".join(lines)
    lines = [head + f": {len(r.deltas)} weight change(s)"]
    top = sorted(r.deltas, key=lambda d: (-abs(d.delta), d.source, d.target))[:8]
    lines += [f"  {d.delta:+.3f}  {d.source} -> {d.target}" for d in top]
    return "\n".join(lines)


def inject_text(r: InjectReport) -> str:
    if not r.created:
        return f"{r.node_id} already holds this content; nothing recorded"
    text = f"injected {r.node_id} with {r.connections} connection(s)"
    if r.selection != "content":
        return text + ("; inhibits " + ", ".join(r.inhibits) if r.inhibits else "")
    lines = [text + f"; vetoes {len(r.vetoed)} chunk(s) its content contradicts:"]
    lines += [f"  vetoed  {c.source}  [{c.id}]" for c in r.vetoed] or ["  (none)"]
    if r.spared:
        lines.append(f"left alone {len(r.spared)} fired chunk(s) (--all vetoes every one):")
        lines += [f"  kept    {c.source}  [{c.id}]" for c in r.spared]
    return "\n".join(lines)
