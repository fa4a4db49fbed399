"""Rendering the comparisons of points in the brain's history (``diff``, ``what-if``):
the stable JSON objects (documented in README.md) and the human text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ocb.cli.render.encode import fields, plain

if TYPE_CHECKING:
    from ocb.whatif import DiffReport, WhatIfReport
    from replay.diff import EdgeChange, GraphDiff, NodeChange


# --------------------------------------------------------------------------- JSON


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


# --------------------------------------------------------------------------- text


def _edge_text(c: EdgeChange) -> str:
    if c.change == "added":
        return f"  added    {c.source} -> {c.target} ({c.after:+.3f}, {c.tier_after})"
    if c.change == "removed":
        return f"  removed  {c.source} -> {c.target} ({c.before:+.3f}, {c.tier_before})"
    tiers = f"  [{c.tier_before} -> {c.tier_after}]" if c.tier_before != c.tier_after else ""
    return (
        f"  {c.delta:+.3f}  {c.before or 0.0:+.3f} -> {c.after or 0.0:+.3f}  "
        f"{c.source} -> {c.target}{tiers}"
    )


def _node_text(n: NodeChange) -> str:
    what = f" ({', '.join(n.fields)})" if n.fields else ""
    return f"  node {n.change:<8} {n.id}  {n.source}{what}"


def _tiers_text(before: dict[str, int], after: dict[str, int]) -> str:
    return ", ".join(f"{t} {before[t]} -> {after[t]}" for t in before)


def _edges_text(g: GraphDiff) -> str:
    return (
        f"{g.edges_changed} changed by more than {g.threshold:g} ({g.edges_within} by less), "
        f"{g.stops_changed} stop weight(s) changed"
    )


def diff_text(r: DiffReport) -> str:
    g = r.graph
    when = [
        f"seq {s}" + (f" ({t})" if t else "")
        for s, t in ((r.from_seq, r.from_time), (r.to_seq, r.to_time))
    ]
    lines = [
        f"{when[0]} -> {when[1]}: {r.records} record(s)",
        f"nodes: +{g.nodes_added} added, -{g.nodes_removed} removed, {g.nodes_changed} changed",
        f"edges: +{g.edges_added} added, -{g.edges_removed} removed, " + _edges_text(g),
        "tiers: " + _tiers_text(g.tiers_before, g.tiers_after),
    ]
    if g.transitions:
        lines.append("transitions: " + ", ".join(f"{k} {v}" for k, v in g.transitions.items()))
    if g.edges:
        lines.append("largest edge changes:")
        lines += [_edge_text(c) for c in g.edges]
    if g.nodes:
        lines.append("node changes:")
        lines += [_node_text(n) for n in g.nodes]
    return "\n".join(lines)


def what_if_text(r: WhatIfReport) -> str:
    g, q, s = r.weights, r.queries, r.replay
    given = ", ".join(f"{k}={v}" for k, v in r.overrides.items()) or "the recorded settings"
    lines = [
        f"what-if from seq {r.from_seq} to {r.to_seq} with {given}: {s.outcomes} outcome(s) "
        f"and {s.maintenance} maintenance run(s) re-decided, {s.copied} record(s) copied"
        + (f", {s.retractions} retraction(s) re-decided" if s.retractions else ""),
        "weights: " + _edges_text(g),
        "tiers (real -> what-if): " + _tiers_text(g.tiers_before, g.tiers_after),
        f"queries ({q.count} re-run, real -> what-if): fired {q.real_mean_fired:.1f} -> "
        f"{q.what_if_mean_fired:.1f}, context chars {q.real_mean_context_chars:.0f} -> "
        f"{q.what_if_mean_context_chars:.0f}; {q.changed} fired other nodes",
    ]
    if g.edges:
        lines.append("largest weight differences (real -> what-if):")
        lines += [_edge_text(c) for c in g.edges]
    if q.top:
        lines.append("queries that differ most (real -> what-if):")
        lines += [
            f"  {run.query!r}: fired {run.real_fired} -> {run.what_if_fired}, "
            f"{run.real_context_chars} -> {run.what_if_context_chars} chars"
            for run in q.top
        ]
    return "\n".join(lines)
