"""The fast fold of a rebuild (one decode pass that skips what no fold reads, weight
updates as arrays) against the record-by-record fold, byte for byte."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from hypothesis import given, settings, strategies as st

from ocb_events.codec import encode_record, fold_decoder
from ocb_events.frames import encode_frame, segment_header
from ocb_events.log import SegmentLog
from ocb_events.memory import MemoryLog
from ocb_events.protocol import EventLog
from ocb_events.schema import (
    STOP,
    EdgeDeltas,
    EdgesCreated,
    EdgeSpec,
    EdgesUpdated,
    Event,
    NodeValue,
)
from projections import PROJECTIONS, fold
from replay.folding import fold_fast, read_for
from replay.weights import WeightRuns
from tests.projections.streams import streams
from tests.replay.folds import NAMES, append, chunk_graph, clock, reference, snapshots


def _fast(log: EventLog, names: list[str] = NAMES) -> dict[str, bytes]:
    states = {n: PROJECTIONS[n].initial() for n in names}
    return snapshots(fold_fast(read_for(log, names, 1, log.last_seq), states))


@given(a=streams, b=streams)
def test_fast_fold_of_a_segment_log_equals_the_record_fold(a: list[Event], b: list[Event]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        with SegmentLog(Path(tmp) / "log", clock=clock(), durability="none") as log:
            append(log, [a, b])
            assert _fast(log) == reference(log)
            assert _fast(log, ["graph"]) == reference(log, ["graph"])


@given(a=streams, b=streams, c=streams)
def test_fast_fold_of_a_tail_onto_restored_snapshots_equals_the_record_fold(
    a: list[Event], b: list[Event], c: list[Event]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        with SegmentLog(Path(tmp) / "log", clock=clock(), durability="none") as log:
            append(log, [a])
            middle = log.last_seq
            append(log, [b, c])
            head = snapshots(fold(log.read(1, middle, light=True), _initial()))
            states = {n: PROJECTIONS[n].restore(body) for n, body in head.items()}
            got = fold_fast(read_for(log, NAMES, middle + 1, log.last_seq), states)
            assert snapshots(got) == reference(log)


def _initial() -> dict[str, Any]:
    return {n: PROJECTIONS[n].initial() for n in NAMES}


@given(a=streams)
def test_fast_fold_of_decoded_records_equals_the_record_fold(a: list[Event]) -> None:
    log = MemoryLog(clock=clock())
    append(log, [a])
    assert _fast(log) == reference(log)


# ------------------------------------------------------------------ long weight runs

_OLD = msgspec.msgpack.Encoder()
"""The msgpack form of every record (weight updates included) before the packed one."""


def _copies(log: SegmentLog, directory: Path) -> list[Path]:
    """The records of ``log`` written anew: every weight update in the msgpack form,
    and one in two (a log written before and after the packed form)."""
    out = []
    for name, old in (("old", lambda seq: True), ("mixed", lambda seq: seq % 2 == 0)):
        path = directory / name
        path.mkdir()
        data, chain = bytearray(segment_header(1, bytes(16))), bytes(16)
        for r in log.read():
            payload = _OLD.encode(r) if old(r.seq) else encode_record(r)
            frame, chain = encode_frame(r.seq, r.ts, payload, chain)
            data += frame
        (path / f"{1:020d}.seg").write_bytes(bytes(data))
        out.append(path)
    return out


def _every_encoding_folds_alike(log: SegmentLog, directory: Path) -> None:
    want = reference(log, ["graph"])
    assert _fast(log, ["graph"]) == want
    for path in _copies(log, directory):
        with SegmentLog(path, writer=False) as copy:
            assert reference(copy, ["graph"]) == want
            assert _fast(copy, ["graph"]) == want, path.name


NODES = [f"n.md::{i}" for i in range(8)]
"""The nodes of the test graph (``chunk_graph(NODES, into_last=False)``: deltas into
the last node are dropped)."""


_targets = st.lists(st.sampled_from([*NODES, STOP]), min_size=0, max_size=9, unique=True)
_deltas = st.one_of(
    st.floats(-0.02, 0.02, allow_nan=False),  # small: sums that never reach a bound
    st.floats(-0.9, 0.9, allow_nan=False),  # large: clipped again and again
    st.sampled_from([0.0, -0.0, 1e-300, 0.1, -0.1]),
)


@st.composite
def _updates(draw: st.DrawFn, by_source: bool = False) -> EdgesUpdated:
    """A weight update; ``by_source``: with a baseline for each update's source, as the
    learning rules record them (sources may repeat, and include a node not in the
    graph), else with baselines of any nodes."""
    nodes = st.sampled_from([*NODES, "gone.md::1"])
    sources = draw(st.lists(nodes, max_size=3, unique=not by_source))
    updates = []
    for source in sources:
        targets = draw(_targets)
        deltas = draw(st.lists(_deltas, min_size=len(targets), max_size=len(targets)))
        updates.append(EdgeDeltas(source=source, targets=tuple(targets), deltas=tuple(deltas)))
    if by_source:
        values = draw(st.lists(_deltas, min_size=len(sources), max_size=len(sources)))
        baselines = [NodeValue(node=s, value=v) for s, v in zip(sources, values, strict=True)]
    else:
        baselines = draw(
            st.lists(st.builds(NodeValue, node=st.sampled_from(NODES), value=_deltas), max_size=2)
        )
    return EdgesUpdated(updates=tuple(updates), rule="pg", cause_seq=1, baselines=tuple(baselines))


@settings(max_examples=40)
@given(
    runs=st.lists(st.lists(_updates(), min_size=1, max_size=12), min_size=1, max_size=3),
    times=st.integers(1, 40),
)
def test_long_runs_of_weight_updates_fold_as_one_by_one(
    runs: list[list[EdgesUpdated]], times: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        with SegmentLog(Path(tmp) / "log", clock=clock(), durability="none") as log:
            # runs apart: a record that sets an edge anew ends a run; each run repeats
            # its updates so that weights hit their bounds and stay there a while
            spec = EdgeSpec(source=NODES[0], target=NODES[1], weight=0.5, kind="sibling")
            reset = EdgesCreated(edges=(spec,))
            append(
                log,
                [
                    chunk_graph(NODES, into_last=False),
                    *(b for run in runs for b in ([reset], run * times)),
                ],
            )
            _every_encoding_folds_alike(log, Path(tmp))


@settings(max_examples=40)
@given(
    first=st.lists(_updates(by_source=True), min_size=1, max_size=12),
    then=st.lists(_updates(by_source=True), max_size=12),
    other=_updates(),
)
def test_baselines_recorded_for_the_sources_fold_as_one_by_one(
    first: list[EdgesUpdated], then: list[EdgesUpdated], other: EdgesUpdated
) -> None:
    # the baselines of a run whose baselines are its sources are read through the
    # sources' shapes; one record otherwise sends the run the general way
    with tempfile.TemporaryDirectory() as tmp:
        with SegmentLog(Path(tmp) / "log", clock=clock(), durability="none") as log:
            spec = EdgeSpec(source=NODES[0], target=NODES[1], weight=0.5, kind="sibling")
            reset = EdgesCreated(edges=(spec,))
            append(log, [chunk_graph(NODES, into_last=False), first, [reset], then, [other], first])
            _every_encoding_folds_alike(log, Path(tmp))


def test_updates_whose_lists_differ_in_length_fold_as_one_by_one() -> None:
    odd = EdgesUpdated(
        updates=(
            EdgeDeltas(source=NODES[0], targets=(NODES[1], NODES[2]), deltas=(0.5,)),
            EdgeDeltas(source=NODES[1], targets=(NODES[0],), deltas=(0.25, 0.75)),
        ),
        rule="pg",
        cause_seq=1,
    )
    tmp = Path(tempfile.mkdtemp())
    with SegmentLog(tmp / "log", clock=clock(), durability="none") as log:
        append(log, [chunk_graph(NODES, into_last=False), [odd, odd, odd]])
        _every_encoding_folds_alike(log, tmp)


def _run_of(runs: WeightRuns) -> Any:
    """A run as it folds: each change's edge by name, seq and delta bits; baselines in
    order, their values' bits."""
    run = runs.take()
    changes = [
        (run.pairs[p], s, d.hex())
        for p, s, d in zip(run.pair.tolist(), run.seq.tolist(), run.delta.tolist(), strict=True)
    ]
    return changes, [(n, v.hex()) for n, v in run.baselines.items()]


@settings(max_examples=60)
@given(
    updates=st.lists(st.one_of(_updates(), _updates(by_source=True)), min_size=1, max_size=30),
    forms=st.lists(st.sampled_from(["packed", "msgpack", "decoded"]), min_size=30, max_size=30),
    cuts=st.sets(st.integers(1, 29), max_size=4),
)
def test_weight_runs_read_every_form_of_a_record_alike(
    updates: list[EdgesUpdated], forms: list[str], cuts: set[int]
) -> None:
    """A run gathered from packed bodies, msgpack bytes or decoded records, in any mix
    and cut into runs anywhere, gives the same changes and baselines, with its edges
    numbered alike."""
    decode = fold_decoder({"edges_updated"})
    want, got = WeightRuns(), WeightRuns()
    wanted, gotten = [], []
    for i, (ev, form) in enumerate(zip(updates, forms, strict=False)):
        rec = msgspec.structs.replace(_record_of(ev), seq=i + 1)
        want.add(rec.seq, ev)
        if form == "decoded":
            got.add(rec.seq, ev)
        else:
            data = encode_record(rec) if form == "packed" else _OLD.encode(rec)
            got.add_raw(rec.seq, decode(memoryview(data)).event)
        if i + 1 in cuts:
            wanted.append(_run_of(want))
            gotten.append(_run_of(got))
    wanted.append(_run_of(want))
    gotten.append(_run_of(got))
    assert gotten == wanted
    assert got.pairs == want.pairs


def _record_of(ev: EdgesUpdated) -> Any:
    from ocb_events.schema import Record

    return Record(seq=1, ts=1, actor="t", event=ev)


def test_only_the_graph_folds_weight_updates() -> None:
    # replay.folding hands edges_updated records to the graph alone, as arrays
    from projections import ROUTES

    assert [n for n, tags in ROUTES.items() if "edges_updated" in tags] == ["graph"]


def test_a_damaged_packed_body_in_a_run_is_corruption_naming_its_record() -> None:
    import pytest

    from ocb_events.codec import EdgesPackedRaw
    from ocb_events.errors import LogCorrupt

    ev = EdgesUpdated(
        updates=(EdgeDeltas(source=NODES[0], targets=(NODES[1],), deltas=(0.5,)),),
        rule="pg",
        cause_seq=1,
        baselines=(NodeValue(node=NODES[0], value=0.25),),
    )
    good = fold_decoder({"edges_updated"})(encode_record(_record_of(ev))).event
    assert type(good) is EdgesPackedRaw
    body = good.w
    later = b"\x02" + body[1:]  # a version this reader does not know
    padded = body[:-16] + b"\x00" * 8 + body[-16:]  # the floats moved by a word
    bad_ids = body[:32] + b"\xff" + body[33:]  # an id that is not UTF-8
    for damaged in (body[:-8], later, padded, bad_ids):
        runs = WeightRuns()
        runs.add_raw(7, good)
        runs.add_raw(8, msgspec.structs.replace(good, w=damaged))
        with pytest.raises(LogCorrupt) as info:
            runs.take()
        assert info.value.seq == 8


def test_packed_records_whose_marks_collide_are_told_apart(monkeypatch: Any) -> None:
    """Records of different shapes with the same mark (here every mark is the last word
    of the ids: their sources differ, their ids' indices do not) each get their own
    shape, as their decoded records do."""
    import replay.weights as weights

    monkeypatch.setattr(weights, "_MIX", [np.uint64(0)] * len(weights._MIX))
    decode = fold_decoder({"edges_updated"})
    want, got = WeightRuns(), WeightRuns()
    for seq in range(1, 41):
        source = NODES[0 if seq <= 13 else seq % 4]  # one shape in the first run
        ev = EdgesUpdated(
            updates=(
                EdgeDeltas(source=source, targets=(NODES[7], STOP), deltas=(0.01 * seq, -0.5)),
            ),
            rule="pg",
            cause_seq=1,
            baselines=(NodeValue(node=source, value=seq / 7),),
        )
        rec = msgspec.structs.replace(_record_of(ev), seq=seq)
        want.add(seq, ev)
        got.add_raw(seq, decode(memoryview(encode_record(rec))).event)
        if seq % 13 == 0:
            assert _run_of(got) == _run_of(want)
    assert _run_of(got) == _run_of(want)
    assert got.pairs == want.pairs
