"""The analytics fold's bulk paths give the rows of its row-by-row path: traces gathered
from their packed bodies (``replay.trace_rows``) and weight updates folded a run at a
time (``replay.delta_runs``), with the graph left byte for byte as its own fold leaves
it."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ocb_events.codec import EdgesPackedRaw, encode_record
from ocb_events.packing import BadBody, list_parts, narrow_columns, pack_trace, trace_columns
from ocb_events.parts import (
    Candidate,
    ChunkText,
    EdgeDeltas,
    EdgeRef,
    EdgeSpec,
    NodeValue,
    QueryParams,
    SeedHit,
    Step,
)
from ocb_events.schema import (
    STOP,
    EdgesCreated,
    EdgesRemoved,
    EdgesUpdated,
    FileIndexed,
    QueryTraced,
    Record,
)
from projections import graph
from replay.columns import HEADS, grouped
from replay.rows import RowFold
from replay.store_load import by_edge
from replay.tables import CODED
from replay.trace_rows import Names, PackedTrace, UpdateRecord, UpdatesRaw, decode_for_rows
from tests.strategies import query_params

NODES = ["a", "b", "c", "d\x1fe"]  # one id holds the separator of joined lists
names = st.sampled_from([*NODES, "ghost"])
floats = st.floats(-1.5, 1.5, allow_nan=False, width=64) | st.floats(-1, 1, width=32)


@st.composite
def traces(draw: st.DrawFn) -> QueryTraced:
    cands = st.builds(
        Candidate,
        target=names,
        weight=floats,
        logit=floats,
        tier=st.sampled_from(["reflex", "dormant"]),
        uses=st.integers(0, 3),
    )
    step = st.builds(
        Step,
        hop=st.integers(-1, 3) | st.just(300),  # (-1: a one-byte msgpack int, not a fixint)
        node=names,
        candidates=st.lists(cands, max_size=3).map(tuple),
        stop_logit=floats,
        chosen=names | st.just(STOP),
        # (8 to 16 ids: 16 is more than a msgpack fixarray holds)
        followed=(st.lists(names, max_size=3) | st.lists(names, min_size=8, max_size=16)).map(
            tuple
        ),
    )
    seed = st.builds(SeedHit, node_id=names, score=floats, lexical=floats, vector=floats)
    # a trace of over 128 names stores its ids as msgpack ints of two bytes (not
    # ``narrow_columns``' bytes of one-byte values): the rows must be the same
    many = [SeedHit(node_id=f"n{i}", score=0.5, lexical=0.0, vector=0.5) for i in range(130)]
    return QueryTraced(
        trace_id=draw(st.sampled_from(["t1", "t2"])),
        query="q",
        seeds=tuple(draw(st.sampled_from([[], many])) + draw(st.lists(seed, max_size=3))),
        steps=tuple(draw(st.lists(step, max_size=3))),
        fired=tuple(draw(st.lists(names, max_size=3))),
        stop_reason="stop",
        context_chars=1,
        params=draw(query_params()),
    )


updates = st.builds(
    lambda src, ps: EdgeDeltas(
        source=src, targets=tuple(t for t, _ in ps), deltas=tuple(d for _, d in ps)
    ),
    names,
    st.lists(st.tuples(names | st.just(STOP), floats), max_size=4),
)
edges = st.lists(
    st.builds(EdgeSpec, source=names, target=names, weight=floats, kind=st.just("k")),
    max_size=6,
)
events = st.one_of(
    st.builds(
        EdgesUpdated,
        updates=st.lists(updates, max_size=3).map(tuple),
        rule=st.just("pg"),
        cause_seq=st.integers(0, 9),
    ),
    traces(),
    edges.map(lambda es: EdgesCreated(edges=tuple(es))),
    edges.map(
        lambda es: EdgesRemoved(
            edges=tuple(EdgeRef(source=e.source, target=e.target) for e in es), cause_seq=1
        )
    ),
)


def _start() -> list[Record]:
    chunks = tuple(
        ChunkText(id=n, text=n, text_hash=n, start_line=i + 1, end_line=i + 1)
        for i, n in enumerate(NODES)
    )
    made = tuple(
        EdgeSpec(source=s, target=t, weight=0.5, kind="k") for s in NODES for t in NODES if s != t
    )
    return [
        Record(
            seq=1, ts=1, actor="t", event=FileIndexed(path="f.md", content_hash="h", chunks=chunks)
        ),
        Record(seq=2, ts=2, actor="t", event=EdgesCreated(edges=made)),
    ]


def _values(col: Any) -> list[Any]:
    """A column's values, None where masked, floats by their bits."""
    if isinstance(col, list) or col.dtype == object:
        return [list(v) if isinstance(v, (list, tuple)) else v for v in list(col)]
    data = np.ma.getdata(col).tolist()
    mask = np.ma.getmaskarray(col).tolist()
    return [
        None if m else float(v).hex() if isinstance(v, float) else v
        for v, m in zip(data, mask, strict=True)
    ]


def _rows(fold: RowFold) -> dict[str, Any]:
    fold.settle()
    out: dict[str, Any] = {}
    names = fold.names.array()
    for table in ("deltas", "fired", "seeds", "steps"):
        data = dict(fold.trace_rows.tables().get(table) or {})
        if data and not len(data["seq"]):
            data = {}
        if data and table == "steps":  # the followed ids come as codes, step after step
            assert fold.trace_rows.followed is not None
            lens, codes = fold.trace_rows.followed
            ends = np.cumsum(lens).tolist()
            flat = names[codes].tolist()
            data["followed"] = [flat[e - n : e] for n, e in zip(lens.tolist(), ends, strict=True)]
        if len(fold.tails[table]):
            assert not data
            data = grouped(table, fold.tails[table], fold.groups[table], fold.names)
        names = fold.names.array()
        heads = data.pop(HEADS, {})  # (a table whose heads the store keeps apart)
        for cols in (data, heads):
            for c in CODED[table]:  # codes differ from fold to fold: compare the names
                if c in cols:
                    got = cols[c]
                    cols[c] = np.where(np.ma.getmaskarray(got), None, names[np.ma.getdata(got)])
        out[table] = {k: _values(v) for k, v in data.items()}
        out[f"{table} heads"] = {k: _values(v) for k, v in heads.items()}
    out["traces"] = fold.rows["traces"]
    out["events"] = fold.rows["events"]
    out["graph"] = graph.snapshot(fold.graph())
    out["touched"] = sorted(fold.nodes_touched)
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(events, max_size=8))
def test_the_bulk_fold_gives_the_rows_of_the_row_by_row_fold(evs: list[Any]) -> None:
    recs = _start() + [Record(seq=i + 3, ts=i + 3, actor="t", event=ev) for i, ev in enumerate(evs)]
    folds = [RowFold(graph.initial, ("", 0), bulk=b) for b in (True, True, False)]
    for rec in recs:
        # the bulk fold reads records as the segment log hands them over: traces and
        # weight updates left packed; and weight updates in the older msgpack form
        folds[0].add(decode_for_rows(encode_record(rec)))
        folds[1].add(decode_for_rows(msgspec.msgpack.encode(rec)))
        folds[2].add(rec)
    bulk, older, rows = (_rows(f) for f in folds)
    # a row-by-row fold writes each trace's followed ids as a list
    rows_followed = rows["steps"].get("followed")
    if rows_followed is not None:
        rows["steps"]["followed"] = [list(v) for v in rows_followed]
    assert bulk == rows
    assert older == rows


@given(query_params())
def test_a_trace_comes_packed_and_anything_else_decoded(params: QueryParams) -> None:
    ev = QueryTraced(
        trace_id="t",
        query="q",
        seeds=(),
        steps=(),
        fired=("a",),
        stop_reason="stop",
        context_chars=0,
        params=params,
    )
    got = decode_for_rows(encode_record(Record(seq=5, ts=5, actor="t", event=ev)))
    assert isinstance(got, PackedTrace) and bytes(got.cols[17]) == b"\x91\x00"
    assert got.cols[0] == ["a"] and got.sizes == (1, 0, 0)
    assert got.event.params == params and got.event.trace_id == "t"
    assert decode_for_rows(encode_record(_start()[0])) == _start()[0]


def test_a_weight_update_comes_with_its_updates_left_packed_or_raw() -> None:
    ev = EdgesUpdated(
        updates=(EdgeDeltas(source="a", targets=("b", "c"), deltas=(0.5, -0.25)),),
        rule="pg",
        cause_seq=3,
        baselines=(NodeValue(node="a", value=0.125),),
    )
    rec = Record(seq=7, ts=7, actor="t", event=ev)
    packed = decode_for_rows(encode_record(rec))
    assert isinstance(packed, UpdateRecord) and isinstance(packed.event, EdgesPackedRaw)
    assert (packed.seq, packed.event.rule, packed.event.cause_seq) == (7, "pg", 3)
    older = decode_for_rows(msgspec.msgpack.encode(rec))
    assert isinstance(older, UpdateRecord) and isinstance(older.event, UpdatesRaw)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b[:2] + [[]] + b[3:],  # a seed id with no string
        lambda b: b[:12] + [[1]] + b[13:],  # a candidate no step holds
        lambda b: [*b[:18], [len(b[1])]],  # a fired id past the string table
        lambda b: [*b[:18], [200]],  # the same, stored in two bytes
        lambda b: [*b[:18], [-1]],  # a negative index (one byte, not a fixint)
        lambda b: b[:4] + [b"\x04\x00"] + b[5:],  # a float column of the wrong length
        lambda b: [2, *b[1:]],  # another version
    ],
)
@pytest.mark.parametrize("read", [trace_columns, narrow_columns])
def test_a_body_whose_columns_disagree_is_refused(mutate: Any, read: Any) -> None:
    body = pack_trace(
        [SeedHit(node_id="a", score=1.0, lexical=0.0, vector=0.5)],
        [Step(hop=1, node="a", candidates=(), stop_logit=0.0, chosen="b", followed=())],
        ["a"],
    )
    read(body)
    parts = list(msgspec.msgpack.decode(body))
    with pytest.raises(BadBody):
        read(msgspec.msgpack.encode(mutate(parts)))


@given(traces())
def test_narrow_columns_hold_the_values_of_trace_columns(ev: QueryTraced) -> None:
    """Each int column comes as bytes exactly when every value fits one msgpack byte,
    and holds the values ``trace_columns`` reads either way."""
    body = pack_trace(ev.seeds, ev.steps, ev.fired)
    floats_at = {2, 3, 4, 7, 12, 14}  # raw float columns: the same bytes in both
    pairs: list[Any] = list(zip(narrow_columns(body), trace_columns(body), strict=True))
    for i, (narrow, wide) in enumerate(pairs):
        if i in floats_at or i == 0:
            assert narrow == wide
        elif i == 9:  # the steps' followed ids: how many each, and all of them
            fits = all(len(v) < 16 and all(0 <= f < 128 for f in v) for v in wide)
            assert isinstance(narrow, tuple) == fits
            lens, ids = list_parts(narrow)
            assert list(lens) == [len(v) for v in wide]
            assert list(ids) == [f for v in wide for f in v]
        else:
            fits = all(0 <= v < 128 for v in wide)
            assert isinstance(narrow, bytes) == fits
            assert list(narrow) == wide


@given(st.lists(st.lists(st.none() | st.sampled_from(["a", "b", "", "d\x1fe", "é"]), max_size=6)))
def test_names_code_each_name_once_and_keep_none_as_null(batches: list[list[str | None]]) -> None:
    """Names coded batch after batch, by a run that starts from the names the store
    holds, read back as they were: one code per name, None masked."""
    names = Names(["a"])
    for vals in batches:
        codes = names.coded(vals)
        back = names.array()[np.ma.getdata(codes)].tolist()
        mask = np.ma.getmaskarray(codes).tolist()
        assert [None if m else b for b, m in zip(back, mask, strict=True)] == vals
    assert names.codes["a"] == 0
    assert sorted(names.codes.values()) == list(range(len(names.table)))
    again = Names(names.table)  # the next run, from what the store holds
    assert again.codes == names.codes and again.stored == len(names.table)


codes = st.integers(0, 3) | st.sampled_from([65_535, 65_536, 65_538, 2**31 - 1])


@given(st.lists(st.tuples(codes, codes), max_size=30))
def test_a_flush_s_changes_are_stored_by_edge_then_in_log_order(edges: list[Any]) -> None:
    """``by_edge`` orders rows by their edge's codes, then seq and ord, every column
    along (the order of ``ORDER BY source, target, seq, ord``)."""
    n = len(edges)
    data = {
        "source": np.asarray([s for s, _ in edges], dtype=np.int32),
        "target": np.asarray([t for _, t in edges], dtype=np.int32),
        "seq": np.arange(n, dtype=np.int64) // 2,
        "ord": np.arange(n, dtype=np.int64) % 2,
        "before": np.ma.masked_array(np.arange(n, dtype=np.float64), mask=np.arange(n) % 3 == 0),
    }
    got = by_edge(dict(data))
    key = ("source", "target", "seq", "ord")
    rows = sorted(zip(*(data[c].tolist() for c in key), strict=True))
    assert list(zip(*(got[c].tolist() for c in key), strict=True)) == rows
    i = got["seq"] * 2 + got["ord"]  # each row's place in the flush
    assert np.ma.getmaskarray(got["before"]).tolist() == (i % 3 == 0).tolist()
    assert np.ma.getdata(got["before"]).tolist() == i.astype(np.float64).tolist()
