"""Weight updates stored packed (``ocb_events.packed_updates``, ``codec``): exact round
trips, the old encoding still read, damaged bodies refused, and an older reader
refusing the new form as an unknown event type."""

from __future__ import annotations

import struct
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from ocb_events.codec import (
    PACKED_UPDATES,
    EdgesPackedRaw,
    decode_for_fold,
    decode_record,
    encode_record,
    fold_decoder,
    is_packed_updates,
)
from ocb_events.errors import LogCorrupt, UnknownEventType
from ocb_events.packed_updates import (
    HEADER,
    BadUpdates,
    pack_updates,
    structure_key,
    unpack_updates,
)
from ocb_events.parts import EdgeDeltas, LearnParams, NodeValue
from ocb_events.schema import STOP, EdgesUpdated, Record
from tests.strategies import learn_params

_OLD = msgspec.msgpack.Encoder()

# every float64 bit pattern: -0.0, infinities, NaNs with any payload and sign
any_floats = st.one_of(
    st.floats(),
    st.sampled_from([-0.0, 0.0, 5e-324, -5e-324]),
    st.integers(0, 2**64 - 1).map(lambda b: struct.unpack("<d", struct.pack("<Q", b))[0]),
)
node_ids = st.one_of(
    st.sampled_from(["a.md::0", "a.md::1", "b.md::0", STOP, "é", "x\x00y"]),
    st.text(min_size=0, max_size=10),
)


@st.composite
def updates(draw: Any) -> EdgeDeltas:
    """An update whose lists may differ in length (the fold cuts them)."""
    targets = draw(st.lists(node_ids, max_size=5))
    if draw(st.booleans()):
        deltas = draw(st.lists(any_floats, min_size=len(targets), max_size=len(targets)))
    else:
        deltas = draw(st.lists(any_floats, max_size=6))
    return EdgeDeltas(source=draw(node_ids), targets=tuple(targets), deltas=tuple(deltas))


edges_updated = st.builds(
    EdgesUpdated,
    updates=st.lists(updates(), max_size=6).map(tuple),
    rule=st.text(max_size=8),
    cause_seq=st.integers(-(2**63), 2**63 - 1),
    params=st.none() | learn_params(),
    baselines=st.lists(st.builds(NodeValue, node=node_ids, value=any_floats), max_size=5).map(
        tuple
    ),
)
packed_records = st.builds(
    Record,
    seq=st.integers(1, 2**62),
    ts=st.integers(0, 2**62),
    actor=st.text(max_size=6),
    event=edges_updated,
)


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


def _exact(ev: EdgesUpdated) -> Any:
    """Everything of ``ev``, floats as their bits (a NaN is not equal to itself)."""
    ups = [(u.source, u.targets, [_bits(d) for d in u.deltas]) for u in ev.updates]
    base = [(b.node, _bits(b.value)) for b in ev.baselines]
    return ups, base, ev.rule, ev.cause_seq, _OLD.encode(ev.params)


@given(rec=packed_records)
def test_a_weight_update_round_trips_exactly_in_its_packed_form(rec: Record) -> None:
    data = encode_record(rec)
    assert data.startswith(PACKED_UPDATES) and is_packed_updates(data)
    for got in (decode_record(data), decode_for_fold(data), decode_record(memoryview(data))):
        assert (got.seq, got.ts, got.actor) == (rec.seq, rec.ts, rec.actor)
        assert type(got.event) is EdgesUpdated
        assert _exact(got.event) == _exact(rec.event)
    assert encode_record(decode_record(data)) == data, "the encoding is canonical"


@given(rec=packed_records)
def test_the_old_encoding_of_a_weight_update_still_decodes_to_the_same(rec: Record) -> None:
    old = _OLD.encode(rec)
    assert not is_packed_updates(old)
    assert _exact(decode_record(old).event) == _exact(decode_record(encode_record(rec)).event)


def test_every_field_of_a_weight_update_is_kept() -> None:
    # a field added to EdgesUpdated must be stored by the packed form too
    from ocb_events import codec

    kept = {*codec._UPDATES_KEPT, "updates", "baselines"}
    assert kept == set(EdgesUpdated.__struct_fields__)


@given(rec=packed_records)
def test_the_fold_reads_the_packed_body_with_its_rule_and_cause(rec: Record) -> None:
    data = encode_record(rec)
    peek = fold_decoder({"edges_updated"})(memoryview(data))
    ev = peek.event
    assert type(ev) is EdgesPackedRaw and (ev.rule, ev.cause_seq) == (
        rec.event.rule,
        rec.event.cause_seq,
    )
    ups, base = unpack_updates(ev.w)
    got = EdgesUpdated(updates=ups, baselines=base, rule="", cause_seq=0)
    assert _exact(got)[:2] == _exact(rec.event)[:2]
    assert type(fold_decoder({"query_traced"})(data).event).__name__ == "Skipped_edges_packed"


def _rewrapped(rec: Record, body: bytes) -> bytes:
    raw = msgspec.msgpack.decode(encode_record(rec))
    raw["event"]["w"] = body
    return msgspec.msgpack.encode(raw)


@settings(max_examples=300)
@given(rec=packed_records, data=st.data())
def test_a_damaged_body_is_refused_or_says_exactly_what_it_decodes_to(
    rec: Record, data: st.DataObject
) -> None:
    """Cut short, lengthened or with any byte of its header, ids or padding changed, a
    body is corruption naming the record, or else a body that packs back to itself:
    never a record read from bytes that do not say it (a float's bits are any float,
    which the frame's checksum guards)."""
    body = bytearray(encode_record(rec) and pack_updates(rec.event.updates, rec.event.baselines))
    cut = len(structure_key(bytes(body))) + 4
    how = data.draw(st.sampled_from(["cut", "grow", "flip"]))
    if how == "cut":
        damaged = bytes(body[: data.draw(st.integers(0, len(body) - 1))])
    elif how == "grow":
        damaged = bytes(body) + bytes(data.draw(st.sampled_from([1, 4, 8])))
    else:
        at = data.draw(st.integers(0, cut - 1))
        body[at] ^= data.draw(st.integers(1, 255))
        damaged = bytes(body)
    buf = _rewrapped(rec, damaged)
    try:
        got = decode_record(buf, segment="s.seg", offset=40)
    except LogCorrupt as exc:
        assert (exc.segment, exc.offset, exc.seq) == ("s.seg", 40, rec.seq)
        with pytest.raises(BadUpdates):
            unpack_updates(damaged)
        return
    assert how == "flip"
    assert pack_updates(got.event.updates, got.event.baselines) == damaged


def test_a_body_of_another_version_is_refused() -> None:
    body = pack_updates((EdgeDeltas(source="a", targets=("b",), deltas=(0.5,)),), ())
    later = HEADER.pack(2, *HEADER.unpack_from(body)[1:]) + body[HEADER.size :]
    with pytest.raises(BadUpdates, match="version 2"):
        unpack_updates(later)


def test_an_older_reader_refuses_the_packed_form_as_an_unknown_event_type() -> None:
    """A version of OpenClawBrain before the packed form decodes a record with the
    typed decoder of the msgpack form, which fails on the packed form's tag, and then
    looks the tag up among the events it knows: none has it, so it refuses the record
    as an unknown event type (upgrade to read it) instead of misreading it."""
    from ocb_events import codec

    rec = Record(
        seq=3,
        ts=1,
        actor="a",
        event=EdgesUpdated(
            updates=(EdgeDeltas(source="a", targets=("b",), deltas=(0.5,)),),
            rule="pg",
            cause_seq=2,
            params=LearnParams(eta=0.1),
        ),
    )
    data = encode_record(rec)
    with pytest.raises(msgspec.ValidationError):
        msgspec.msgpack.Decoder(Record).decode(data)
    tag = codec._RAW_DECODER.decode(data)["event"]["type"]
    assert tag == codec.PACKED_TAG and tag not in codec._KNOWN_TAGS
    assert "upgrade" in UnknownEventType(tag, "s.seg", 0).hint


def _body(strings: list[bytes], source: int, targets: list[int]) -> bytes:
    """A body of one update written by hand (two deltas, no baselines)."""
    u32 = struct.Struct("<I")
    structure = b"".join(
        [
            struct.pack("<2I", len(strings), 1),
            *(u32.pack(len(s)) for s in strings),
            *strings,
            struct.pack("<3I", source, len(targets), 2),
            *(u32.pack(t) for t in targets),
        ]
    )
    head = HEADER.pack(1, len(structure), 2, 0)
    return head + structure + bytes(-len(structure) % 8) + struct.pack("<2d", 0.5, 0.25)


def test_a_body_whose_ids_are_not_numbered_in_order_of_use_is_refused() -> None:
    """Two bodies never unpack to the same updates: ids numbered otherwise than in
    order of first use, or one id stored twice, is damage."""
    body = pack_updates((EdgeDeltas(source="ab", targets=("cd", "ab"), deltas=(0.5, 0.25)),), ())
    assert _body([b"ab", b"cd"], 0, [1, 0]) == body
    for other in (
        _body([b"cd", b"ab"], 1, [0, 1]),  # numbered otherwise
        _body([b"ab", b"cd", b"ab"], 0, [1, 2]),  # "ab" twice
        _body([b"ab", b"cd", b"ef"], 0, [1, 0]),  # "ef" never used
    ):
        with pytest.raises(BadUpdates, match="order of first use"):
            unpack_updates(other)


def test_the_rewrite_stores_an_old_logs_weight_updates_packed_and_folds_the_same(
    tmp_path: Any,
) -> None:
    from ocb_events.integrity import verify_log
    from ocb_events.log import SegmentLog
    from ocb_events.recode import rewrite_log
    from replay import PROJECTIONS, rebuild

    def update(i: int) -> EdgesUpdated:
        ups = (EdgeDeltas(source=f"n{i % 3}", targets=(STOP, f"n{i % 5}"), deltas=(0.1, -0.0)),)
        return EdgesUpdated(updates=ups, rule="pg", cause_seq=i, baselines=())

    recs = [Record(seq=i, ts=i, actor="t", event=update(i)) for i in range(1, 31)]
    directory = tmp_path / "log"
    _write_old(directory, recs, 12)

    def folded(log: SegmentLog) -> dict[str, bytes]:
        return {n: PROJECTIONS[n].snapshot(s) for n, s in rebuild(log).items()}

    with SegmentLog(directory, writer=False) as log:
        before = folded(log)
        assert not any(is_packed_updates(p) for p in _payloads(log))
    verify_log(directory)
    rewrite_log(directory)
    verify_log(directory)
    with SegmentLog(directory, writer=False) as log:
        assert [_exact(r.event) for r in log.read()] == [_exact(r.event) for r in recs]
        assert all(is_packed_updates(p) for p in _payloads(log))
        assert folded(log) == before


def _write_old(directory: Any, recs: list[Record], per_segment: int) -> None:
    """A log of records in the msgpack form, as an older writer left it."""
    from ocb_events.frames import encode_frame, segment_header

    directory.mkdir()
    chain = bytes(16)
    for i in range(0, len(recs), per_segment):
        part = recs[i : i + per_segment]
        out = bytearray(segment_header(part[0].seq, chain))
        for r in part:
            frame, chain = encode_frame(r.seq, r.ts, _OLD.encode(r), chain)
            out += frame
        (directory / f"{part[0].seq:020d}.seg").write_bytes(bytes(out))


def _payloads(log: Any) -> list[bytes]:
    """Each record's bytes as stored."""
    return list(log.read_decoded(1, log.last_seq, lambda buf, **_: bytes(buf)))
