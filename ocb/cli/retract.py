"""The ``retract`` command (registered on ``ocb.cli.app.app``) and its renderers (the JSON
shape is documented in README.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ocb.cli.app import BrainOpt, JsonOpt, _out, _warn, app, handled

if TYPE_CHECKING:
    from ocb.graph.retract import Moved, RetractReport


@app.command()
@handled
def retract(
    brain: BrainOpt,
    seq: Annotated[
        int | None, typer.Option(help="Seq of an outcome, teacher label or injection.")
    ] = None,
    node: Annotated[str, typer.Option(help="An injected node (e.g. correction::1).")] = "",
    trace: Annotated[str, typer.Option(help="The newest outcome of this trace.")] = "",
    chat_id: Annotated[str, typer.Option(help="The newest outcome of this chat.")] = "",
    source: Annotated[
        str, typer.Option(help="With --trace/--chat-id: only outcomes from this source.")
    ] = "",
    reason: Annotated[str, typer.Option(help="Why, kept with the retraction.")] = "",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print, record nothing.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Take back an outcome, a teacher label or an injection (both stay in the history).

    An outcome or label: the weight changes it made are reversed (weights nothing else
    moved since return to what they were; later changes stay) and the reward baselines
    it moved are restored. An injection: the node and its edges go, and what it vetoed
    fires again. A retraction cannot itself be retracted: record the outcome again.

    \b
    Example:
      ocb retract --brain /tmp/brain --chat-id c1 --reason "wrong chat"
      ocb retract --brain /tmp/brain --node correction::1 --dry-run
      ocb retract --brain /tmp/brain --seq 1234 --json
    """
    from ocb.brain import Brain

    with Brain(brain, writer=not dry_run, warn=_warn) as b:
        report = b.retract(
            seq=seq,
            node_id=node,
            trace_id=trace,
            chat_id=chat_id,
            source=source,
            reason=reason,
            dry_run=dry_run,
        )
    _out(report, as_json, retract_text, retract_json)


def _moved(m: Moved, first: str = "source", second: str = "target") -> dict[str, Any]:
    return {first: m.source, second: m.target, "before": m.before, "after": m.after}


def retract_json(r: RetractReport) -> dict[str, Any]:
    return {
        "seq": r.seq,
        "recorded": r.recorded,
        "target": {"seq": r.target_seq, "kind": r.kind, "detail": r.detail},
        "reason": r.reason,
        "weights": [_moved(m) for m in r.weights],
        "baselines": [
            {"node": m.source, "before": m.before, "after": m.after} for m in r.baselines
        ],
        "relevance": [_moved(m) for m in r.relevance],
        "removed": {
            "node": r.removed_node,
            "edges": [
                {"source": m.source, "target": m.target, "weight": m.before} for m in r.removed
            ],
        },
        "skipped": r.skipped,
    }


def retract_text(r: RetractReport) -> str:
    verb = "retracted" if r.recorded else "would retract (dry run, nothing recorded)"
    head = f"{verb} the {r.detail} (seq {r.target_seq})"
    if r.recorded:
        head += f" at seq {r.seq}"
    if r.removed_node:
        lines = [f"{head}: removed {r.removed_node} and its {len(r.removed)} edge(s)"]
        lines += [f"  {m.before:+.3f}  {m.source} -> {m.target}" for m in r.removed]
        return "\n".join(lines)
    n, b = len(r.weights), len(r.baselines)
    lines = [f"{head}: {n} weight(s) reversed, {b} baseline(s) restored"]
    lines += [f"  {m.before:.3f} -> {m.after:.3f}  {m.source} -> {m.target}" for m in r.weights]
    lines += [f"  {m.before:.3f} -> {m.after:.3f}  baseline of {m.source}" for m in r.baselines]
    lines += [
        f"  {m.before:.3f} -> {m.after:.3f}  relevance of {m.source} -> {m.target}"
        for m in r.relevance
    ]
    lines += [f"  skipped {s}" for s in r.skipped]
    return "\n".join(lines)
