"""Many trace bodies' int columns read at once (``replay.body_scan``) give what msgspec
decodes of each, and a flush's bodies that do not read are read as the full decoder
reads them (``replay.trace_rows.TraceRows``)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, strategies as st

from ocb_events.errors import LogCorrupt
from ocb_events.packing import pack_trace, raw_columns
from ocb_events.parts import Candidate, SeedHit, Step
from replay.body_scan import read_ints, read_lists
from replay.trace_rows import Names, TraceRows

_ENC = msgspec.msgpack.Encoder()
ints = st.integers(0, 127) | st.sampled_from([-1, -33, 128, 255, 300, 70_000, -(2**40)])
# arrays of one-byte ints mostly, of wider ones, long ones (a three-byte header), and
# items that are not arrays of ints at all
int_arrays = (
    st.lists(st.integers(0, 127), max_size=20)
    | st.lists(ints, max_size=6)
    | st.lists(st.integers(0, 127), min_size=16, max_size=40)
    | st.sampled_from([{"a": 1}, "x", 5, [1.5], [[1]], None])
)
list_arrays = (
    st.lists(st.lists(st.integers(0, 127), max_size=17), max_size=18)
    | st.lists(st.lists(ints, max_size=4), max_size=4)
    | st.sampled_from([{"a": 1}, "x", 5, [1.5], [[1], 2], [[0x91]], [[1.5]]])
)


def _raws(values: list[Any]) -> list[msgspec.Raw]:
    return [msgspec.Raw(_ENC.encode(v)) for v in values]


def _decoded(raw: msgspec.Raw, kind: Any) -> Any:
    try:
        return msgspec.msgpack.decode(bytes(raw), type=kind)
    except msgspec.ValidationError:
        return None


@given(st.lists(int_arrays, max_size=8))
def test_int_arrays_read_at_once_are_what_msgspec_decodes(values: list[Any]) -> None:
    raws = _raws(values)
    counts, flat, ok = read_ints(raws)
    each = [_decoded(r, list[int]) for r in raws]
    assert ok.tolist() == [v is not None for v in each]
    assert counts.tolist() == [len(v or []) for v in each]
    assert flat.tolist() == [x for v in each for x in v or []]


@given(st.lists(list_arrays, max_size=8))
def test_arrays_of_lists_read_at_once_are_what_msgspec_decodes(values: list[Any]) -> None:
    raws = _raws(values)
    n_lists, lens, ids, ok = read_lists(raws)
    each = [_decoded(r, list[list[int]]) for r in raws]
    assert ok.tolist() == [v is not None for v in each]
    assert n_lists.tolist() == [len(v or []) for v in each]
    assert lens.tolist() == [len(x) for v in each for x in v or []]
    assert ids.tolist() == [y for v in each for x in v or [] for y in x]


def _body(fired: list[int]) -> bytes:
    """A packed body whose fired ids are the indices given (its string table: a, b, t)."""
    body = pack_trace(
        [SeedHit(node_id="a", score=1.0, lexical=0.0, vector=0.5)],
        [
            Step(
                hop=1,
                node="a",
                candidates=(Candidate(target="b", weight=0.5, logit=0.5, tier="t", uses=1),),
                stop_logit=0.0,
                chosen="b",
                followed=("b",),
            )
        ],
        ["a"],
    )
    parts = list(msgspec.msgpack.decode(body))
    return _ENC.encode([*parts[:18], fired])


def test_a_body_whose_ids_leave_its_table_is_read_as_the_full_decoder_reads_it() -> None:
    """A fired id of -1 (the last name, to Python's indexing in ``unpack_trace``) is no
    index ``narrow_columns`` accepts: the flush reads that body the full way, as the
    fold of the decoded record would, and the rows of the others stay."""
    rows = TraceRows(Names())
    for seq, body in enumerate((_body([0]), _body([-1]), _body([0]))):
        rows.add(seq, raw_columns(body), body, ("seg", 9))
    fired = rows.tables()["fired"]
    assert rows.names.array()[fired["node"]].tolist() == ["a", "t", "a"]


def test_a_body_nothing_reads_is_a_corrupt_log_naming_the_record() -> None:
    body = _body([7])  # past the string table: the full decoder refuses it too
    rows = TraceRows(Names())
    rows.add(12, raw_columns(body), body, ("seg-1", 40))
    with pytest.raises(LogCorrupt, match=r"seq 12 \(segment seg-1, offset 40\): bad trace body"):
        rows.tables()
