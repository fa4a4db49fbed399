"""Diffing two graph states: exact counts, the largest changes, tiers and transitions."""

from __future__ import annotations

import msgspec
from hypothesis import given, strategies as st

from ocb.engine.learning import group_by_source
from ocb.engine.policy import tier_of
from ocb.settings import Traversal
from ocb_events.schema import (
    STOP,
    ChunkSpan,
    ChunkText,
    EdgeDelta,
    EdgeRef,
    EdgesCreated,
    EdgeSpec,
    EdgesRemoved,
    EdgesUpdated,
    Event,
    FileChanged,
    FileIndexed,
)
from projections import graph
from replay import TIERS, Tiers, diff_graphs, tier_counts
from tests.projections.streams import as_records, streams

NODES = [f"a.md::{i}" for i in range(5)]
# weights and deltas on a 1/64 grid, so sums are exact and zero means "back where it was"
grid = st.integers(-32, 32).map(lambda k: k / 64)
small = st.integers(-8, 8).map(lambda k: k / 64)
pairs = st.tuples(st.sampled_from(NODES), st.sampled_from([*NODES, STOP])).filter(
    lambda p: p[0] != p[1]
)
tiers = st.builds(
    Tiers,
    reflex=st.floats(0.3, 1.0),
    habitual=st.floats(0.0, 0.3),
    inhibitory=st.floats(-0.5, 0.0),
)


def fold(evs: list[Event], state: graph.State | None = None, start: int = 1) -> graph.State:
    g = graph.initial() if state is None else state
    for rec in as_records(evs, start):
        g = graph.evolve(g, rec)
    return g


def copy(g: graph.State) -> graph.State:
    return graph.restore(graph.snapshot(g))


def base(weights: dict[tuple[str, str], float]) -> list[Event]:
    chunks = tuple(
        ChunkText(id=n, text=f"text {i}", text_hash=str(i), start_line=i + 1, end_line=i + 1)
        for i, n in enumerate(NODES)
    )
    specs = tuple(
        EdgeSpec(source=s, target=t, weight=w, kind="test")
        for (s, t), w in sorted(weights.items())
        if t != STOP
    )
    return [FileIndexed(path="a.md", content_hash="h", chunks=chunks), EdgesCreated(edges=specs)]


def update(deltas: list[tuple[str, str, float]]) -> EdgesUpdated:
    flat = [EdgeDelta(source=s, target=t, delta=d) for s, t, d in deltas]
    return EdgesUpdated(updates=group_by_source(flat), rule="pg", cause_seq=1)


def brute(a: graph.State, b: graph.State, threshold: float) -> dict[str, set[tuple[str, str]]]:
    """The reference: every edge of both states compared one by one."""
    ea = {(s, t): e.weight for s, ts in a.out.items() for t, e in ts.items()}
    eb = {(s, t): e.weight for s, ts in b.out.items() for t, e in ts.items()}
    moved = {k for k in ea.keys() & eb.keys() if ea[k] != eb[k]}
    stops = {
        (n, STOP) for n in a.stop.keys() | b.stop.keys() if a.stop.get(n, 0.0) != b.stop.get(n, 0.0)
    }
    delta = {
        **{k: eb[k] - ea[k] for k in moved},
        **{(n, t): b.stop.get(n, 0.0) - a.stop.get(n, 0.0) for n, t in stops},
    }
    return {
        "added": eb.keys() - ea.keys(),
        "removed": ea.keys() - eb.keys(),
        "changed": {k for k in moved if abs(delta[k]) > threshold},
        "stops": {k for k in stops if abs(delta[k]) > threshold},
        "within": {k for k in moved | stops if abs(delta[k]) <= threshold},
    }


@given(
    st.dictionaries(pairs, grid, max_size=12),
    st.lists(st.lists(st.tuples(pairs, small), max_size=6), max_size=3),
    st.sampled_from([0.0, 1 / 64, 0.1]),
)
def test_the_diff_lists_exactly_the_edges_the_updates_in_between_moved(
    weights: dict[tuple[str, str], float],
    batches: list[list[tuple[tuple[str, str], float]]],
    threshold: float,
) -> None:
    before = fold(base(weights))
    updates = [update([(s, t, d) for (s, t), d in batch]) for batch in batches]
    after = fold(updates, copy(before), start=3)
    net: dict[tuple[str, str], float] = {}
    for batch in batches:
        for (s, t), d in batch:
            if t == STOP or (s, t) in weights:  # a delta on a missing edge is ignored
                net[(s, t)] = net.get((s, t), 0.0) + d
    moved = {k: d for k, d in net.items() if d != 0.0}
    d = diff_graphs(before, after, threshold=threshold, top=1000)
    listed = {(c.source, c.target) for c in d.edges}
    assert listed == {k for k, v in moved.items() if abs(v) > threshold}
    assert d.edges_changed == sum(
        1 for (_, t), v in moved.items() if t != STOP and abs(v) > threshold
    )
    assert d.stops_changed == sum(
        1 for (_, t), v in moved.items() if t == STOP and abs(v) > threshold
    )
    assert d.edges_within == sum(1 for v in moved.values() if abs(v) <= threshold)
    assert (d.edges_added, d.edges_removed, d.nodes_added, d.nodes_removed) == (0, 0, 0, 0)
    for c in d.edges:
        assert c.delta == moved[(c.source, c.target)]


@given(streams, streams, st.sampled_from([0.0, 0.05, 0.5]), st.integers(1, 8))
def test_counts_match_a_brute_force_comparison_and_top_keeps_the_largest(
    a: list[Event], b: list[Event], threshold: float, top: int
) -> None:
    before = fold(a)
    after = fold(b, copy(before), start=len(a) + 1)
    ref = brute(before, after, threshold)
    full = diff_graphs(before, after, threshold=threshold, top=10_000)
    assert {(c.source, c.target) for c in full.edges} == (
        ref["added"] | ref["removed"] | ref["changed"] | ref["stops"]
    )
    assert (full.edges_added, full.edges_removed) == (len(ref["added"]), len(ref["removed"]))
    assert (full.edges_changed, full.stops_changed) == (len(ref["changed"]), len(ref["stops"]))
    assert full.edges_within == len(ref["within"])
    sizes = [(-abs(c.delta), c.source, c.target) for c in full.edges]
    assert sizes == sorted(sizes)
    short = diff_graphs(before, after, threshold=threshold, top=top)
    assert short.edges == full.edges[:top] and short.nodes == full.nodes[:top]
    assert msgspec.structs.replace(short, edges=[], nodes=[]) == msgspec.structs.replace(
        full, edges=[], nodes=[]
    )
    assert diff_graphs(before, after, threshold=threshold, top=0).edges_added == full.edges_added


@given(streams, streams)
def test_a_diff_reversed_swaps_added_and_removed(a: list[Event], b: list[Event]) -> None:
    x = fold(a)
    y = fold(b, copy(x), start=len(a) + 1)
    fwd, back = diff_graphs(x, y), diff_graphs(y, x)
    assert (fwd.nodes_added, fwd.nodes_removed) == (back.nodes_removed, back.nodes_added)
    assert (fwd.edges_added, fwd.edges_removed) == (back.edges_removed, back.edges_added)
    assert (fwd.edges_changed, fwd.stops_changed, fwd.nodes_changed) == (
        back.edges_changed,
        back.stops_changed,
        back.nodes_changed,
    )


@given(streams)
def test_a_state_against_itself_or_its_restored_copy_has_no_changes(evs: list[Event]) -> None:
    g = fold(evs)
    for other in (g, copy(g)):
        d = diff_graphs(g, other)
        assert d.nodes == [] and d.edges == [] and d.transitions == {}
        assert d.edges_within == d.nodes_changed == 0
        assert d.tiers_before == d.tiers_after == tier_counts(g, Tiers())


@given(st.floats(-1, 1), tiers)
def test_tiers_follow_the_traversal_rule(weight: float, t: Tiers) -> None:
    trav = Traversal(reflex=t.reflex, habitual=t.habitual, inhibitory=t.inhibitory)
    assert t.of(weight) == tier_of(weight, trav)
    assert Tiers() == Tiers(
        reflex=Traversal().reflex, habitual=Traversal().habitual, inhibitory=Traversal().inhibitory
    )


@given(streams, streams, tiers, tiers)
def test_tier_counts_cover_every_edge_and_transitions_count_the_edges_that_moved_tier(
    a: list[Event], b: list[Event], ta: Tiers, tb: Tiers
) -> None:
    x = fold(a)
    y = fold(b, copy(x), start=len(a) + 1)
    d = diff_graphs(x, y, tiers_before=ta, tiers_after=tb)
    assert list(d.tiers_before) == list(TIERS) == list(d.tiers_after)
    assert sum(d.tiers_before.values()) == x.edge_count()
    assert sum(d.tiers_after.values()) == y.edge_count()
    moved = sum(
        1
        for s, ts in x.out.items()
        for t, e in ts.items()
        if t in y.out.get(s, {}) and ta.of(e.weight) != tb.of(y.out[s][t].weight)
    )
    assert sum(d.transitions.values()) == moved
    assert all(k.split("->")[0] != k.split("->")[1] for k in d.transitions)


def test_settings_alone_move_tiers() -> None:
    g = fold(base({("a.md::0", "a.md::1"): 0.5, ("a.md::1", "a.md::2"): 0.1}))
    d = diff_graphs(g, g, tiers_before=Tiers(), tiers_after=Tiers(reflex=0.4, habitual=0.05))
    assert d.edges == [] and d.transitions == {"dormant->habitual": 1, "habitual->reflex": 1}


def test_added_removed_and_changed_nodes_and_edges_are_named() -> None:
    x = fold(base({("a.md::0", "a.md::1"): 0.25, ("a.md::1", "a.md::2"): 0.5}))
    evs: list[Event] = [
        FileChanged(
            path="a.md",
            content_hash="h2",
            kept=tuple(
                ChunkSpan(id=f"a.md::{i}", text_hash=str(i), start_line=i + 2, end_line=i + 2)
                for i in (0, 1, 2)
            ),
            added=(ChunkText(id="a.md::9", text="new", text_hash="n", start_line=1, end_line=1),),
            removed=("a.md::3",),
        ),
        EdgesRemoved(edges=(EdgeRef(source="a.md::1", target="a.md::2"),), cause_seq=1),
        EdgesCreated(edges=(EdgeSpec(source="a.md::9", target="a.md::0", weight=0.7, kind="t"),)),
        update([("a.md::0", "a.md::1", 0.5), ("a.md::0", STOP, -0.25)]),
    ]
    y = fold(evs, copy(x), start=3)
    d = diff_graphs(x, y, top=10)
    assert [(n.id, n.change, n.fields) for n in d.nodes] == [
        ("a.md::9", "added", ()),
        ("a.md::3", "removed", ()),
        ("a.md::0", "changed", ("start_line", "end_line")),
        ("a.md::1", "changed", ("start_line", "end_line")),
        ("a.md::2", "changed", ("start_line", "end_line")),
    ]
    assert d.nodes[0].source == "a.md#L1-L1" and d.nodes[2].source == "a.md#L2-L2"
    assert [(c.source, c.target, c.change, c.before, c.after) for c in d.edges] == [
        ("a.md::9", "a.md::0", "added", None, 0.7),
        ("a.md::0", "a.md::1", "changed", 0.25, 0.75),
        ("a.md::1", "a.md::2", "removed", 0.5, None),
        ("a.md::0", STOP, "changed", 0.0, -0.25),
    ]
    assert [(c.tier_before, c.tier_after) for c in d.edges] == [
        ("", "reflex"),
        ("habitual", "reflex"),
        ("habitual", ""),
        ("", ""),
    ]
    assert (d.nodes_added, d.nodes_removed, d.nodes_changed) == (1, 1, 3)
    assert (d.edges_added, d.edges_removed, d.edges_changed, d.stops_changed) == (1, 1, 1, 1)
    assert d.transitions == {"habitual->reflex": 1}
    assert x.edge_count() == 2  # the inputs are left as they were
