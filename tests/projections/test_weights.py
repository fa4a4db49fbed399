"""The graph's weight runs folded as arrays (``projections._weights``): the sorting
they rely on keeps the order of equal keys, whatever the keys' range; a run folds as
its records do one by one, byte for byte."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import given, settings, strategies as st

from ocb_events.schema import (
    STOP,
    ChunkText,
    EdgeDeltas,
    EdgeRef,
    EdgesCreated,
    EdgeSpec,
    EdgesRemoved,
    EdgesUpdated,
    Event,
    FileIndexed,
    NodeValue,
    Record,
)
from projections import WeightRun, fold_weights, graph
from projections._weights import _grouped, _stable_order

_keys = st.integers(0, 3).flatmap(
    lambda width: st.lists(st.integers(0, [2**8, 2**16 - 1, 2**32 - 1, 2**40][width]), max_size=300)
)


@given(keys=_keys, repeat=st.integers(1, 3))
def test_the_order_is_the_stable_sorting_order_of_any_keys(keys: list[int], repeat: int) -> None:
    arr = np.array(keys * repeat, dtype=np.int64)  # repeated keys: ties to keep in order
    assert np.array_equal(_stable_order(arr), np.argsort(arr, kind="stable"))
    # the same items grouped by keys in another order, small or too large to pack
    _, items = np.unique(arr, return_inverse=True)
    for key in (len(arr) - np.arange(len(arr)), 2**62 - np.arange(len(arr))):
        want = np.argsort(key[items], kind="stable")
        assert np.array_equal(_grouped(key, items.astype(np.int64)), want)


# ------------------------------------------------------------------ runs against records

_NODES = [f"w.md::{i}" for i in range(6)]
_EDGES = [(s, t) for s in _NODES for t in _NODES if s != t and t != _NODES[-1]]
_PAIRS = [*_EDGES, *((n, STOP) for n in _NODES), (_NODES[0], _NODES[-1]), ("gone.md::0", STOP)]
"""Every edge of the graph, every node's stop weight, an edge the graph does not hold
and the stop weight of a node it does not hold."""

_delta = st.one_of(
    st.floats(-0.01, 0.01),  # small: sums that never reach a bound
    st.floats(-2.5, 2.5),  # large: clipped at either bound, again and again
    st.sampled_from([0.0, -0.0, 1e-300, -5e-324, 1.0, -1.0]),
    st.sampled_from([math.nan, math.inf, -math.inf]),
)
_change = st.tuples(st.integers(0, len(_PAIRS) - 1), _delta)
_record = st.one_of(
    st.lists(_change, max_size=12),
    # one edge updated many times within one record (enough to leave few slots moving)
    st.tuples(st.integers(0, len(_PAIRS) - 1), st.lists(_delta, min_size=20, max_size=60)).map(
        lambda hot: [(hot[0], d) for d in hot[1]]
    ),
)


def _graph() -> graph.State:
    chunks = tuple(
        ChunkText(id=n, text=f"t{i}", text_hash=f"h{i}", start_line=i + 1, end_line=i + 1)
        for i, n in enumerate(_NODES)
    )
    edges = tuple(EdgeSpec(source=s, target=t, weight=0.0, kind="sibling") for s, t in _EDGES)
    g = graph.initial()
    for seq, ev in enumerate((FileIndexed(path="w.md", content_hash="c", chunks=chunks),), 1):
        g = graph.evolve(g, Record(seq=seq, ts=seq, actor="t", event=ev))
    return graph.evolve(g, Record(seq=2, ts=2, actor="t", event=EdgesCreated(edges=edges)))


def _event(changes: list[tuple[int, float]], baseline: float) -> EdgesUpdated:
    """The changes in order, one update each (so a source's edge may come many times)."""
    updates = tuple(
        EdgeDeltas(source=_PAIRS[p][0], targets=(_PAIRS[p][1],), deltas=(d,)) for p, d in changes
    )
    return EdgesUpdated(
        updates=updates,
        rule="pg",
        cause_seq=1,
        baselines=(NodeValue(node=_NODES[0], value=baseline),),
    )


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(_record, min_size=1, max_size=25),
    cuts=st.sets(st.integers(1, 400), max_size=6),
    start=st.sampled_from([0.0, 0.999999, -0.999999, 1.0, -1.0]),
    times=st.integers(1, 30),
)
def test_weight_runs_fold_as_their_records_one_by_one(
    records: list[list[tuple[int, float]]], cuts: set[int], start: float, times: int
) -> None:
    """Runs cut anywhere, their edges at either bound or near one, clipped mid-run,
    each updated many times within a record and across records (repeated ``times``),
    with zero, signed-zero, subnormal, infinite and NaN deltas, and updates of edges
    and nodes the graph does not hold: the snapshot is the one-record fold's, byte for
    byte."""
    records = records * times
    want, got = _graph(), _graph()
    begin = EdgesCreated(
        edges=tuple(EdgeSpec(source=s, target=t, weight=start, kind="sibling") for s, t in _EDGES)
    )
    for g in (want, got):
        graph.evolve(g, Record(seq=3, ts=3, actor="t", event=begin))
        g.stop.update({n: start for n in _NODES[:3]})
    run: list[tuple[int, list[tuple[int, float]]]] = []
    memo: dict[str, Any] = {}
    for i, changes in enumerate(records):
        seq = 10 + i
        want = graph.evolve(
            want, Record(seq=seq, ts=seq, actor="t", event=_event(changes, float(i)))
        )
        run.append((seq, changes))
        if i + 1 in cuts or i + 1 == len(records):
            fold_weights(got, _run(run, memo))
            run = []
    got.seq = want.seq
    assert graph.snapshot(got) == graph.snapshot(want)


_between = st.sampled_from(
    [
        # the edges set anew (new objects), one removed, the edge it lacked created,
        # the node it lacked indexed: each seen by the run after it
        EdgesCreated(
            edges=tuple(EdgeSpec(source=s, target=t, weight=0.5, kind="x") for s, t in _EDGES)
        ),
        EdgesRemoved(edges=(EdgeRef(source=_NODES[0], target=_NODES[1]),), cause_seq=1),
        EdgesCreated(edges=(EdgeSpec(source=_NODES[0], target=_NODES[-1], weight=0.0, kind="x"),)),
        FileIndexed(
            path="gone.md",
            content_hash="g",
            chunks=(ChunkText(id="gone.md::0", text="g", text_hash="g", start_line=1, end_line=1),),
        ),
    ]
)


@settings(max_examples=60, deadline=None)
@given(records=st.lists(_record, min_size=1, max_size=8), between=_between, times=st.integers(1, 3))
def test_a_graph_record_between_two_runs_changes_what_the_next_one_finds(
    records: list[list[tuple[int, float]]], between: Event, times: int
) -> None:
    """The same run twice (the same edges touched), a graph record between them: the
    second run folds into the graph as that record left it."""
    want, got = _graph(), _graph()
    memo: dict[str, Any] = {}
    seq = 10
    for _ in range(times):
        for g in (want, got):
            g.stop.update({n: 0.5 for n in _NODES})
        for every in range(2):
            run = []
            for changes in records:
                seq += 1
                want = graph.evolve(
                    want, Record(seq=seq, ts=seq, actor="t", event=_event(changes, float(seq - 10)))
                )
                run.append((seq, changes))
            fold_weights(got, _run(run, memo))
            if every == 0:
                seq += 1
                for g in (want, got):
                    graph.evolve(g, Record(seq=seq, ts=seq, actor="t", event=between))
    got.seq = want.seq
    assert graph.snapshot(got) == graph.snapshot(want)


def _run(records: list[tuple[int, list[tuple[int, float]]]], memo: dict[str, Any]) -> WeightRun:
    changes = [(seq, p, d) for seq, cs in records for p, d in cs]
    return WeightRun(
        _PAIRS,
        np.array([p for _, p, _ in changes], dtype=np.int64),
        np.array([d for _, _, d in changes], dtype=np.float64),
        np.array([s for s, _, _ in changes], dtype=np.int64),
        {_NODES[0]: float(len(records) and records[-1][0] - 10)},
        memo,
    )
