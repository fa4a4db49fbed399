"""Comparing two graph states: nodes added, removed and changed, edge weights that moved
by more than a threshold, and tier transitions, with counts and the largest changes.

Pure: the comparison reads two ``projections.graph`` states (never mutating them) and
the tier bounds in force at each (``projections.tiers``, the one tier rule), and returns
values. STOP weights count as edges with target ``<STOP>`` (as in learning deltas); they
have no tier. Everything ordered is sorted explicitly, so the same two states always
give the same diff.

Example:
    >>> d = diff_graphs(before, after, threshold=0.05, top=20)    # doctest: +SKIP
    >>> d.edges_changed, d.transitions.get("habitual->reflex", 0)  # doctest: +SKIP
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

import msgspec

from ocb_events.schema import STOP
from projections.graph import Edge, Node, State as GraphState
from projections.tiers import TIERS, Tiers, tier_counts

__all__ = [
    "TIERS",
    "EdgeChange",
    "GraphDiff",
    "NodeChange",
    "Tiers",
    "diff_graphs",
    "tier_counts",
]

NODE_FIELDS = (
    "kind",
    "text",
    "path",
    "start_line",
    "end_line",
    "heading",
    "authority",
    "anchor",
    "also",
)
"""The fields of a node a diff compares (not ``created_seq``: re-indexing the same text
is no change)."""


class NodeChange(msgspec.Struct, frozen=True):
    """A node ``added``, ``removed`` or ``changed`` (``fields``: what differs), with its
    source (``path#Lx-Ly`` or ``inject:<id>``) at the later point when it has one."""

    id: str
    change: str
    source: str
    fields: tuple[str, ...] = ()


class EdgeChange(msgspec.Struct, frozen=True):
    """An edge (or a STOP weight) ``added``, ``removed`` or ``changed``: its weight and
    tier before and after (None and ``""`` where it is absent; STOP has no tier)."""

    source: str
    target: str
    change: str
    before: float | None
    after: float | None
    tier_before: str = ""
    tier_after: str = ""

    @property
    def delta(self) -> float:
        """``after - before``, an absent side counting as 0."""
        return (self.after or 0.0) - (self.before or 0.0)


class GraphDiff(msgspec.Struct, frozen=True):
    """How the graph at one point differs from another.

    Counts cover every change; ``nodes`` and ``edges`` hold the ``top`` largest (edges
    by ``|delta|``, nodes added, then removed, then changed, each by id). An edge
    ``changed`` when its weight moved by more than ``threshold`` (``edges_within``:
    it moved, but not by more). ``tiers_before``/``tiers_after`` count the edges per tier
    under each point's bounds; ``transitions`` (``"habitual->reflex"``: n) the edges
    present at both points whose tier differs.
    """

    threshold: float
    nodes_added: int
    nodes_removed: int
    nodes_changed: int
    edges_added: int
    edges_removed: int
    edges_changed: int
    edges_within: int
    stops_changed: int
    tiers_before: dict[str, int]
    tiers_after: dict[str, int]
    transitions: dict[str, int]
    nodes: list[NodeChange]
    edges: list[EdgeChange]


def _node_fields(a: Node, b: Node) -> tuple[str, ...]:
    return tuple(f for f in NODE_FIELDS if getattr(a, f) != getattr(b, f))


def _node_changes(before: GraphState, after: GraphState) -> Iterator[NodeChange]:
    raw_a, raw_b = before.nodes.raw_items(), after.nodes.raw_items()
    for nid in sorted(raw_b.keys() - raw_a.keys()):
        yield NodeChange(nid, "added", after.nodes[nid].source)
    for nid in sorted(raw_a.keys() - raw_b.keys()):
        yield NodeChange(nid, "removed", before.nodes[nid].source)
    for nid in sorted(raw_a.keys() & raw_b.keys()):
        x, y = raw_a[nid], raw_b[nid]
        if type(x) is msgspec.Raw and type(y) is msgspec.Raw and bytes(x) == bytes(y):
            continue  # both still encoded and identical: no need to decode
        fields = _node_fields(before.nodes[nid], after.nodes[nid])
        if fields:
            yield NodeChange(nid, "changed", after.nodes[nid].source, fields)


def _edge_pairs(
    before: GraphState, after: GraphState
) -> Iterator[tuple[str, str, Edge | None, Edge | None]]:
    for src in sorted(before.out.keys() | after.out.keys()):
        ta: dict[str, Edge] = before.out.get(src) or {}
        tb: dict[str, Edge] = after.out.get(src) or {}
        for dst in sorted(ta.keys() | tb.keys()):
            yield src, dst, ta.get(dst), tb.get(dst)


def _edge_changes(
    before: GraphState, after: GraphState, ta: Tiers, tb: Tiers, threshold: float, n: _Counts
) -> Iterator[EdgeChange]:
    """Every edge change over the threshold (counting all of them in ``n``)."""
    for src, dst, a, b in _edge_pairs(before, after):
        tier_a = ta.of(a.weight) if a is not None else ""
        tier_b = tb.of(b.weight) if b is not None else ""
        if a is None or b is None:
            kind = "added" if a is None else "removed"
            n.edges[kind] += 1
            wa = a.weight if a is not None else None
            wb = b.weight if b is not None else None
            yield EdgeChange(src, dst, kind, wa, wb, tier_a, tier_b)
            continue
        if tier_a != tier_b:
            key = f"{tier_a}->{tier_b}"
            n.transitions[key] = n.transitions.get(key, 0) + 1
        if a.weight == b.weight:
            continue
        if abs(b.weight - a.weight) <= threshold:
            n.edges["within"] += 1
            continue
        n.edges["changed"] += 1
        yield EdgeChange(src, dst, "changed", a.weight, b.weight, tier_a, tier_b)
    for node in sorted(before.stop.keys() | after.stop.keys()):
        wa, wb = before.stop.get(node, 0.0), after.stop.get(node, 0.0)
        if wa == wb:
            continue
        if abs(wb - wa) <= threshold:
            n.edges["within"] += 1
            continue
        n.edges["stops"] += 1
        yield EdgeChange(node, STOP, "changed", wa, wb)


class _Counts:
    """What a diff counts while it streams the changes."""

    def __init__(self) -> None:
        self.nodes = dict.fromkeys(("added", "removed", "changed"), 0)
        self.edges = dict.fromkeys(("added", "removed", "changed", "within", "stops"), 0)
        self.transitions: dict[str, int] = {}


def _size(change: EdgeChange) -> tuple[float, str, str]:
    return (-abs(change.delta), change.source, change.target)


def diff_graphs(
    before: GraphState,
    after: GraphState,
    *,
    tiers_before: Tiers | None = None,
    tiers_after: Tiers | None = None,
    threshold: float = 0.0,
    top: int = 20,
) -> GraphDiff:
    """Compare two graph states (neither is changed).

    Args:
        before: the graph at the earlier point (or the reference, e.g. the real brain).
        after: the graph at the later point (or the alternative, e.g. a what-if).
        tiers_before: the tier bounds in force at ``before`` (default: the defaults).
        tiers_after: those in force at ``after`` (default: ``tiers_before``).
        threshold: an edge counts as changed when its weight moved by more than this.
        top: how many node and edge changes to keep (counts cover all of them).

    Returns:
        The diff: counts, tier distributions and transitions, the largest changes.
    """
    ta = tiers_before or Tiers()
    tb = tiers_after or ta
    n = _Counts()
    nodes: list[NodeChange] = []
    for change in _node_changes(before, after):
        n.nodes[change.change] += 1
        if len(nodes) < top:
            nodes.append(change)
    changes = _edge_changes(before, after, ta, tb, threshold, n)
    edges = heapq.nsmallest(top, changes, key=_size)
    for _ in changes:  # nsmallest(0, ...) stops early: count the rest too
        pass
    return GraphDiff(
        threshold=threshold,
        nodes_added=n.nodes["added"],
        nodes_removed=n.nodes["removed"],
        nodes_changed=n.nodes["changed"],
        edges_added=n.edges["added"],
        edges_removed=n.edges["removed"],
        edges_changed=n.edges["changed"],
        edges_within=n.edges["within"],
        stops_changed=n.edges["stops"],
        tiers_before=tier_counts(before, ta),
        tiers_after=tier_counts(after, tb),
        transitions=dict(sorted(n.transitions.items())),
        nodes=nodes,
        edges=edges,
    )
