"""Rendering the upkeep commands (``maintain``, ``anchor``, ``teach``, ``train-route``,
``health``, ``reembed``) as text (the JSON objects are ``ocb.wire``'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocb.graph.route import TrainReport
    from ocb.graph.teach import TeachReport
    from ocb.reports import ReembedReport
    from ocb.upkeep.health import Health
    from ocb.upkeep.maintain import AnchorReport, MaintenanceReport
    from ocb.upkeep.weights import Change
    from ocb_events.schema import Record


def _change_text(c: Change) -> str:
    if c.kind == "weight":
        return f"  {c.before:+.3f} -> {c.after:+.3f}  {c.source} -> {c.target}"
    if c.kind == "removed":
        return f"  removed {c.source} -> {c.target} ({c.before:+.3f})"
    if c.kind == "created":
        return f"  created {c.source} -> {c.target} ({c.after:+.3f}, {c.note})"
    if c.kind == "merged":
        return f"  merged {c.target} into {c.source} ({c.note})"
    return f"  split {c.source} into {c.target} ({c.note})"


def maintenance_text(r: MaintenanceReport) -> str:
    verb = "would record" if r.dry_run else "recorded"
    head = f"{len(r.ops)} operation(s) {verb} {r.events} event(s)"
    lines = [("dry run, nothing recorded: " if r.dry_run else "") + head]
    for o in r.ops:
        if not o.events:
            where = "nothing to do"
        elif r.dry_run:
            where = f"would record {o.events} event(s)"
        else:
            where = f"seq {o.seq}"
        lines.append(f"{o.op}: {o.summary} [{where}]")
        lines += [_change_text(c) for c in o.changes]
    return "\n".join(lines)


def anchor_text(r: AnchorReport) -> str:
    what = [f"{len(r.node_ids)} node(s)"] + (
        [f"file {r.path} (its future chunks too)"] if r.path else []
    )
    if not r.seq:
        return f"nothing to change: already {r.authority}"
    return f"authority {r.authority} set on {' and '.join(what)} at seq {r.seq}"


def teach_text(r: TeachReport) -> str:
    verb = "recorded" if r.applied else "would record (dry run; --apply to record)"
    lines = [f"{r.labels} label(s): {verb} {len(r.deltas)} weight change(s)"]
    top = sorted(r.deltas, key=lambda d: (-abs(d.delta), d.source, d.target))[:8]
    lines += [f"  {d.delta:+.4f}  {d.source} -> {d.target}" for d in top]
    return "\n".join(lines)


def train_text(r: TrainReport) -> str:
    weights = ", ".join(f"{f} {w:+.3f}" for f, w in zip(r.features, r.weights, strict=True))
    if not r.recorded:
        return (
            f"route model unchanged: {r.examples} labelled decisions train the model "
            f"recorded at seq {r.seq}; nothing recorded ({weights})"
        )
    return (
        f"route model trained on {r.examples} labelled decisions "
        f"(training accuracy {r.accuracy:.1%}), recorded at seq {r.seq}: {weights}"
    )


def health_text(got: tuple[Health, list[Record]]) -> str:
    report, recs = got
    tiers = ", ".join(f"{k} {v:.1%}" for k, v in report.tiers.items())
    lines = [
        f"{report.edges} edges: {tiers}",
        f"last {report.window} queries: {report.avg_fired:.1f} fired "
        f"({report.avg_seeds:.1f} seeds), {report.avg_context_chars:.0f} context chars",
    ]
    lines += [f"finding: {f}" for f in report.findings] or ["healthy"]
    for p in report.proposals:
        done = "applied" if recs else "proposed"
        lines.append(f"{done}: {p.key} {p.current:g} -> {p.proposed:g} ({p.reason})")
    return "\n".join(lines)


def reembed_text(r: ReembedReport) -> str:
    if not r.seq:
        return f"the brain's vectors are already made by {r.after}; nothing recorded"
    return (
        f"switched {r.vectors} vectors from {r.before or 'none'} to {r.after}, "
        f"recorded up to seq {r.seq}"
    )
