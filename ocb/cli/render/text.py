"""Rendering API results for the CLI: the stable JSON objects and the human text.

JSON shapes (documented in README.md) are built here and nowhere else.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from ocb.checks.brain import Check
    from ocb.graph.route import TrainReport
    from ocb.graph.teach import TeachReport
    from ocb.reports import Answer, Hit, InjectReport, LearnReport, SyncReport
    from ocb.upkeep.blobs import BlobReport
    from ocb.upkeep.health import Health
    from ocb.upkeep.maintain import AnchorReport, MaintenanceReport
    from ocb.upkeep.weights import Change
    from ocb_events.schema import Record


def dumps(obj: Any) -> str:
    """Compact, key-stable JSON (UTF-8 kept readable)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def answer_json(a: Answer) -> dict[str, Any]:
    return {
        "trace_id": a.trace_id,
        "query": a.query,
        "chat_id": a.chat_id,
        "results": [
            {
                "id": h.id,
                "source": h.source,
                "text": h.text,
                "score": h.score,
                "fired": h.fired,
                "kind": h.kind,
                **_also(h),
            }
            for h in a.results
        ],
        "fired": a.fired,
        "stop_reason": a.stop_reason,
        "context_chars": a.context_chars,
        "context": a.context,
    }


def _also(hit: Hit) -> dict[str, list[str]]:
    """``also``: the sources of chunks merged into a result, only when it has some."""
    return {"also": list(hit.also)} if hit.also else {}


def answer_text(a: Answer) -> str:
    head = (
        f"trace {a.trace_id or '(not recorded)'} · {len(a.fired)} fired · "
        f"{a.context_chars} chars · stop: {a.stop_reason}"
    )
    lines = [head]
    for i, h in enumerate(a.results, 1):
        mark = "" if h.fired else "  (not fired)"
        first = h.text.strip().splitlines()[0] if h.text.strip() else ""
        lines.append(f"{i:2d}. {h.score:.3f}  {h.source}  [{h.id}]{mark}")
        lines.append(f"    {first[:100]}")
    return "\n".join(lines)


def sync_text(r: SyncReport) -> str:
    text = (
        f"indexed {r.files_indexed} new, {r.files_changed} changed, "
        f"{r.files_removed} removed file(s): "
        f"+{r.chunks_added} / -{r.chunks_removed} chunks, +{r.edges_created} edges "
        f"({r.events} events). brain: {r.nodes} nodes, {r.edges} edges."
        + (f" {len(r.secrets)} secret(s) redacted (see warnings)." if r.secrets else "")
    )
    if r.blobs_regenerated:
        text += f" regenerated {r.blobs_regenerated} lost vector blob(s)."
    return text


def sync_json(r: SyncReport) -> dict[str, Any]:
    d = msgspec.structs.asdict(r)
    d["skipped"] = [{"path": p, "reason": why} for p, why in r.skipped]
    d["secrets"] = [
        {"path": p, "line": line, "end_line": end, "kind": kind} for p, line, end, kind in r.secrets
    ]
    return d


def learn_json(r: LearnReport) -> dict[str, Any]:
    return {
        "outcome_seq": r.outcome_seq,
        "trace_id": r.trace_id,
        "rule": r.rule,
        "source": r.source,
        "reward": r.reward,
        "deltas": [{"source": d.source, "target": d.target, "delta": d.delta} for d in r.deltas],
        "recorded": r.recorded,
    }


def learn_text(r: LearnReport) -> str:
    verb = "recorded" if r.recorded else "already recorded (nothing new)"
    lines = [
        f"outcome {r.reward:+g} ({r.source}, {r.rule}) {verb} at seq {r.outcome_seq}"
        + (f" for trace {r.trace_id}" if r.trace_id else "")
        + f": {len(r.deltas)} weight change(s)"
    ]
    top = sorted(r.deltas, key=lambda d: (-abs(d.delta), d.source, d.target))[:8]
    lines += [f"  {d.delta:+.3f}  {d.source} -> {d.target}" for d in top]
    return "\n".join(lines)


def inject_json(r: InjectReport) -> dict[str, Any]:
    d = msgspec.structs.asdict(r)
    d["vetoed"] = [{"id": c.id, "source": c.source} for c in r.vetoed]
    d["spared"] = [{"id": c.id, "source": c.source} for c in r.spared]
    return d


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


def doctor_text(checks: list[Check]) -> str:
    return "\n".join(f"{c.status.upper():4}  {c.name}: {c.detail}" for c in checks)


def repair_text(r: BlobReport) -> str:
    if not r.lost:
        return f"repair: no lost blobs ({r.named} named by the log)"
    lines = [f"repair: {r.regenerated} of {len(r.lost)} lost blob(s) regenerated"]
    for b in r.lost:
        lines.append(f"  {b.status:14} {b.blob[:12]} ({b.kind}, seq {b.seq}): {b.detail}")
    return "\n".join(lines)


def maintenance_json(r: MaintenanceReport) -> dict[str, Any]:
    return {
        "dry_run": r.dry_run,
        "now_ns": r.now_ns,
        "events": r.events,
        "ops": [
            {
                "op": o.op,
                "seq": o.seq,
                "events": o.events,
                "summary": o.summary,
                "params": o.params,
                "counts": o.counts,
                "changes": [msgspec.structs.asdict(c) for c in o.changes],
            }
            for o in r.ops
        ],
    }


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


def anchor_json(r: AnchorReport) -> dict[str, Any]:
    return msgspec.structs.asdict(r)


def anchor_text(r: AnchorReport) -> str:
    what = [f"{len(r.node_ids)} node(s)"] + (
        [f"file {r.path} (its future chunks too)"] if r.path else []
    )
    if not r.seq:
        return f"nothing to change: already {r.authority}"
    return f"authority {r.authority} set on {' and '.join(what)} at seq {r.seq}"


def teach_json(r: TeachReport) -> dict[str, Any]:
    return {
        "labels": r.labels,
        "applied": r.applied,
        "relevance": r.relevance,
        "deltas": [{"source": d.source, "target": d.target, "delta": d.delta} for d in r.deltas],
    }


def teach_text(r: TeachReport) -> str:
    verb = "recorded" if r.applied else "would record (dry run; --apply to record)"
    lines = [f"{r.labels} label(s): {verb} {len(r.deltas)} weight change(s)"]
    top = sorted(r.deltas, key=lambda d: (-abs(d.delta), d.source, d.target))[:8]
    lines += [f"  {d.delta:+.4f}  {d.source} -> {d.target}" for d in top]
    return "\n".join(lines)


def train_json(r: TrainReport) -> dict[str, Any]:
    return msgspec.structs.asdict(r)


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


def health_json(got: tuple[Health, list[Record]]) -> dict[str, Any]:
    report, recs = got
    d = msgspec.structs.asdict(report)
    d["proposals"] = [msgspec.structs.asdict(p) for p in report.proposals]
    d["applied_seqs"] = [r.seq for r in recs]
    return d


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


def forget_json(r: Any) -> dict[str, Any]:
    return msgspec.structs.asdict(r)


def forget_text(r: Any) -> str:
    seqs = ", ".join(str(s) for s in r.seqs[:12]) + (" ..." if len(r.seqs) > 12 else "")
    head = "would forget" if r.dry_run else "forgot"
    line = f"{head} {r.what} in {len(r.seqs)} record(s) (seq {seqs}): {r.fields} field(s)"
    if r.dry_run:
        return line
    return (
        f"{line}, {r.blobs} vector blob(s) embedded again; snapshots and caches deleted "
        "(commands rebuild them from the log); "
        f"recorded as content_forgotten at seq {r.recorded}"
    )
