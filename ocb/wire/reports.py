"""The JSON objects of the reports the CLI prints under ``--json`` and no daemon
method answers with: the log checks, snapshots and forgetting, retractions, ``warm``,
and the comparisons of points in the history (``diff``, ``what-if``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ocb.wire.encode import fields, plain

if TYPE_CHECKING:
    from ocb.checks.repair import BrainRepair
    from ocb.checks.verify import Verification
    from ocb.graph.retract import RetractReport
    from ocb.graph.warm import WarmReport
    from ocb.memory.unretain import FactRetraction
    from ocb.upkeep.forget import ForgetReport
    from ocb.whatif import DiffReport, WhatIfReport
    from replay.diff import EdgeChange, GraphDiff
    from replay.verify import Check

# --------------------------------------------------------------------------- verify


Verified = tuple["Verification", "BrainRepair | None"]
"""A verification, and the log repair that ran first (None without ``--repair``)."""


def findings_json(found: list[Check]) -> dict[str, Any]:
    """``{"ok", "checks": [{"what", "ok", "detail"}]}``."""
    checks = [{"what": c.name, "ok": c.ok, "detail": c.detail} for c in found]
    return {"ok": all(c.ok for c in found), "checks": checks}


def verify_json(got: Verified) -> dict[str, Any]:
    """The findings, ``"head": {"seq", "chain", "text"}`` (null when the log does not
    verify), and ``{"repair": {...}}`` after ``--repair``: the repair's fields with each
    lost and tampered range as ``{first, last}``."""
    found, fixed = got
    out = findings_json(found.checks)
    out["head"] = None if found.head is None else {**fields(found.head), "text": found.head.text}
    if fixed is not None:
        repair = fields(fixed)
        repair["lost"] = [{"first": a, "last": b} for a, b in fixed.lost]
        repair["tampered"] = [{"first": a, "last": b} for a, b in fixed.tampered]
        out["repair"] = repair
    return out


# --------------------------------------------------------------------------- store


def snapshot_json(written: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """``[{projection, seq}]``, one per snapshot written."""
    return [{"projection": name, "seq": seq} for name, seq in written]


def forget_json(r: ForgetReport) -> dict[str, Any]:
    return fields(r)


# --------------------------------------------------------------------------- retract


def retract_json(r: RetractReport) -> dict[str, Any]:
    """The weights and relevances moved as their fields; the record taken back under
    ``target``, a baseline as ``{node, before, after}``, a removed edge as ``{source,
    target, weight}``."""
    return {
        "seq": r.seq,
        "recorded": r.recorded,
        "target": {"seq": r.target_seq, "kind": r.kind, "detail": r.detail},
        "reason": r.reason,
        "weights": plain(r.weights),
        "baselines": [
            {"node": m.source, "before": m.before, "after": m.after} for m in r.baselines
        ],
        "relevance": plain(r.relevance),
        "removed": {
            "node": r.removed_node,
            "edges": [
                {"source": m.source, "target": m.target, "weight": m.before} for m in r.removed
            ],
        },
        "skipped": r.skipped,
        "credits": [
            {"route": m.source, "node": m.target, "before": m.before, "after": m.after}
            for m in r.credits
        ],
    }


def fact_json(r: FactRetraction) -> dict[str, Any]:
    """``{fact, source, path, removed, speaker, written}``: the fact taken back, where
    it stood, the lines removed and whether they were (not on a dry run)."""
    return {
        "fact": r.fact_id,
        "source": r.source,
        "path": r.path,
        "removed": r.removed,
        "speaker": r.speaker,
        "written": r.written,
    }


# --------------------------------------------------------------------------- warm


def warm_json(r: WarmReport) -> dict[str, Any]:
    """``{dry_run, transcripts: [...], turns, queries, outcomes, corrections, first_seq,
    last_seq}``."""
    return {
        "dry_run": r.dry_run,
        "transcripts": [
            {
                "path": t.path,
                "session_id": t.session_id,
                "turns": t.turns,
                "new": t.new,
                "known": t.known,
                "pending": t.pending,
                "unanswered": t.unanswered,
                "late": t.late,
                "skipped": [{"line": n, "reason": why} for n, why in t.skipped],
            }
            for t in r.transcripts
        ],
        "turns": r.turns,
        "queries": r.queries,
        "outcomes": {
            "used": r.used,
            "corrected": r.corrected,
            "missed": r.missed,
            "none": r.unscored,
        },
        "corrections": {
            "asked": r.with_corrections,
            "candidates": r.candidates,
            "recorded": r.corrections,
        },
        "first_seq": r.first_seq,
        "last_seq": r.last_seq,
    }


# --------------------------------------------------------------------------- whatif


def _edge_json(c: EdgeChange) -> dict[str, Any]:
    """The change's fields, with ``delta`` (no field: ``after - before``) after ``after``."""
    return {
        "source": c.source,
        "target": c.target,
        "change": c.change,
        "before": c.before,
        "after": c.after,
        "delta": c.delta,
        "tier_before": c.tier_before,
        "tier_after": c.tier_after,
    }


def _edges_json(g: GraphDiff) -> dict[str, Any]:
    return {
        "added": g.edges_added,
        "removed": g.edges_removed,
        "changed": g.edges_changed,
        "within": g.edges_within,
        "stops": g.stops_changed,
        "top": [_edge_json(c) for c in g.edges],
    }


def diff_json(r: DiffReport) -> dict[str, Any]:
    g = r.graph
    return {
        "from": {"seq": r.from_seq, "time": r.from_time},
        "to": {"seq": r.to_seq, "time": r.to_time},
        "records": r.records,
        "threshold": g.threshold,
        "nodes": {
            "added": g.nodes_added,
            "removed": g.nodes_removed,
            "changed": g.nodes_changed,
            "top": plain(g.nodes),
        },
        "edges": _edges_json(g),
        "tiers": {"from": g.tiers_before, "to": g.tiers_after, "transitions": g.transitions},
    }


def what_if_json(r: WhatIfReport) -> dict[str, Any]:
    g, q = r.weights, r.queries
    return {
        "from_seq": r.from_seq,
        "to_seq": r.to_seq,
        "overrides": r.overrides,
        "replay": fields(r.replay),
        "threshold": g.threshold,
        "edges": _edges_json(g),
        "tiers": {"real": g.tiers_before, "what_if": g.tiers_after, "transitions": g.transitions},
        "queries": {
            "count": q.count,
            "real": {
                "mean_fired": q.real_mean_fired,
                "mean_context_chars": q.real_mean_context_chars,
            },
            "what_if": {
                "mean_fired": q.what_if_mean_fired,
                "mean_context_chars": q.what_if_mean_context_chars,
            },
            "changed": q.changed,
            "top": plain(q.top),
        },
    }
