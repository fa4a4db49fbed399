"""Rendering the comparisons of points in the brain's history (``diff``, ``what-if``) as
text (the JSON objects are ``ocb.wire``'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocb.whatif import DiffReport, WhatIfReport
    from replay.diff import EdgeChange, GraphDiff, NodeChange


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
