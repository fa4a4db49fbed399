"""The compact log: packed trace records, full segments compressed in blocks, and the
rewrite of an older log in the current format (``ocb_events.packing``, ``blocks``,
``recode``)."""

from __future__ import annotations

import math
import os
import shutil
import struct
import zlib
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from ocb_events import blocks
from ocb_events.blocks import Packed
from ocb_events.clock import TickClock
from ocb_events.codec import decode_for_fold, decode_record, encode_record
from ocb_events.errors import LogCorrupt
from ocb_events.frames import CURRENT, encode_frame, frame_records, scan_offsets, segment_header
from ocb_events.log import SegmentLog, verify_log
from ocb_events.packing import BadBody, pack_trace, unpack_trace
from ocb_events.parts import Candidate, QueryParams, SeedHit, Step
from ocb_events.recode import REWRITE_SUFFIX, rewrite_log
from ocb_events.rewrite import compress_segment
from ocb_events.schema import QueryTraced, Record
from ocb_events.segments import Segment, list_segments, packed, payload_skips
from replay import PROJECTIONS, fold, rebuild
from tests.ocb_events.golden_log import GOLDEN
from tests.ocb_events.tamper import store_plain
from tests.strategies import any_record, query_traced, records, seed_hits, steps

_OLD = msgspec.msgpack.Encoder()
"""The encoding every record had before the compact one: a map of field names."""


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


def _trace(i: int) -> QueryTraced:
    cands = tuple(
        Candidate(
            target=f"notes/n{i % 7}.md::{k}", weight=0.1 * k + i, logit=0.5 * k, tier="habitual"
        )
        for k in range(5)
    )
    return QueryTraced(
        trace_id=f"t{i}",
        query=f"question {i}",
        seeds=(SeedHit(node_id=f"notes/n{i % 7}.md::0", score=0.25, lexical=1 / 3, vector=i),),
        steps=(
            Step(
                hop=0,
                node=f"notes/n{i % 7}.md::0",
                candidates=cands,
                stop_logit=-1.5,
                chosen="<STOP>",
            ),
        ),
        fired=(f"notes/n{i % 7}.md::0",),
        stop_reason="stop",
        context_chars=100 + i,
        params=_params(),
    )


def _params() -> QueryParams:
    return QueryParams(
        mode="weight", max_hops=3, max_fired=5, max_context_chars=2000, max_seeds=5,
        tau=1.0, damping=0.9, reflex=0.6, habitual=0.2, inhibitory=-0.2, alpha=0.5,
        fire_threshold=0.1, branch=3,
    )  # fmt: skip


def _snapshots(log: SegmentLog) -> dict[str, bytes]:
    states = rebuild(log)
    return {name: PROJECTIONS[name].snapshot(state) for name, state in states.items()}


# ------------------------------------------------------------------ the encoding


@given(rec=records(query_traced()))
def test_a_trace_round_trips_exactly_and_is_smaller(rec: Record) -> None:
    data = encode_record(rec)
    assert data[0] == 0x85, "a trace is stored compact"
    assert decode_record(data) == rec
    assert decode_for_fold(data) == decode_for_fold(_OLD.encode(rec))
    assert decode_record(_OLD.encode(rec)) == rec, "the old encoding still decodes"


@given(rec=any_record)
def test_every_record_decodes_the_same_from_either_encoding(rec: Record) -> None:
    assert decode_record(_OLD.encode(rec)) == decode_record(encode_record(rec)) == rec


@given(
    seeds=st.lists(seed_hits(), max_size=4),
    stps=st.lists(steps(), max_size=3),
    special=st.sampled_from([math.nan, -0.0, 0.0, math.inf, -math.inf, 1e300, 5e-324, 0.1]),
)
def test_the_packed_body_keeps_every_float_bit_for_bit(
    seeds: list[SeedHit], stps: list[Step], special: float
) -> None:
    odd = Candidate(target="x", weight=special, logit=-special, tier="t")
    stps = [*stps, Step(hop=9, node="n", candidates=(odd,), stop_logit=special, chosen="x")]
    seeds = [*seeds, SeedHit(node_id="s", score=special, lexical=special, vector=0.0)]
    got_seeds, got_steps, fired = unpack_trace(pack_trace(seeds, stps, ("a", "b", "a")))
    assert fired == ("a", "b", "a")
    want = [_bits(v) for s in seeds for v in (s.score, s.lexical, s.vector)]
    assert [_bits(v) for s in got_seeds for v in (s.score, s.lexical, s.vector)] == want
    flat = [(c.weight, c.logit) for s in stps for c in s.candidates]
    got = [(c.weight, c.logit) for s in got_steps for c in s.candidates]
    assert [(_bits(a), _bits(b)) for a, b in got] == [(_bits(a), _bits(b)) for a, b in flat]
    assert [_bits(s.stop_logit) for s in got_steps] == [_bits(s.stop_logit) for s in stps]
    assert [(s.hop, s.node, s.chosen, s.followed) for s in got_steps] == [
        (s.hop, s.node, s.chosen, s.followed) for s in stps
    ]


def test_a_damaged_body_is_corruption_naming_the_record() -> None:
    rec = Record(seq=4, ts=9, actor="t", event=_trace(1))
    packed_rec = msgspec.msgpack.decode(encode_record(rec))
    packed_rec["z"] = packed_rec["z"][:-3]
    with pytest.raises(LogCorrupt) as info:
        decode_record(msgspec.msgpack.encode(packed_rec), segment="s.seg", offset=40)
    assert (info.value.segment, info.value.offset, info.value.seq) == ("s.seg", 40, 4)
    with pytest.raises(BadBody):
        unpack_trace(msgspec.msgpack.encode([2]))


# ------------------------------------------------------------------ compressed segments


def _log(directory: Path, n: int = 60, segment_bytes: int = 6000) -> list[Record]:
    recs: list[Record] = []
    with SegmentLog(directory, segment_bytes=segment_bytes, clock=TickClock()) as log:
        for i in range(0, n, 3):
            recs += log.append([_trace(i), _trace(i + 1), _trace(i + 2)], actor="t")
    return recs


def test_full_segments_are_stored_compressed_and_read_the_same(tmp_path: Path) -> None:
    recs = _log(tmp_path / "log")
    segs = list_segments(tmp_path / "log")
    assert len(segs) > 2
    assert all(packed(s.path) is not None for s in segs[:-1])
    assert packed(segs[-1].path) is None, "the segment being written stays plain"
    verify_log(tmp_path / "log")
    with SegmentLog(tmp_path / "log", writer=False) as log:
        assert list(log.read()) == recs
        for r in recs[::7]:
            assert list(log.read(r.seq, r.seq)) == [r]
            assert log.ts_of(r.seq) == r.ts
            assert log.chain_of(r.seq) is not None
    with SegmentLog(tmp_path / "log") as log:  # a writer reopens and appends on
        more = log.append([_trace(99)], actor="t")
    with SegmentLog(tmp_path / "log", writer=False) as log:
        assert list(log.read()) == recs + more


def test_a_record_reads_from_its_own_block_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(blocks, "BLOCK_BYTES2", 128 * 1024)  # blocks smaller than a segment
    recs = _log(tmp_path / "log", 1500, segment_bytes=400_000)
    seg = list_segments(tmp_path / "log")[0]
    box = packed(seg.path)
    assert box is not None and len(box.blocks) >= 2
    first, last = box.blocks[0], box.blocks[-1]
    data = bytearray(seg.path.read_bytes())
    data[last.at + last.stored // 2] ^= 0xFF  # the last block rots where its seal
    st = seg.path.stat()  # cannot see it (same size, inode and mtime)
    seg.path.write_bytes(bytes(data))
    os.utime(seg.path, ns=(st.st_atime_ns, st.st_mtime_ns))
    with SegmentLog(tmp_path / "log", writer=False) as log:
        seq = first.first_seq + 1
        assert list(log.read(seq, seq)) == [recs[seq - 1]]
        with pytest.raises(LogCorrupt) as info:
            list(log.read(last.first_seq, last.first_seq))
    assert (info.value.segment, info.value.offset, info.value.seq) == (
        seg.name,
        last.offset,
        last.first_seq,
    )
    assert "compressed block" in info.value.message


def test_corruption_inside_a_compressed_block_is_found_and_named(tmp_path: Path) -> None:
    _log(tmp_path / "log")
    seg = list_segments(tmp_path / "log")[1]
    box = Packed(seg.path)
    block = box.blocks[0]
    pristine = seg.path.read_bytes()
    for at in (block.at, block.at + block.stored // 2, block.at + block.stored - 1):
        data = bytearray(pristine)
        data[at] ^= 0x01
        seg.path.write_bytes(bytes(data))
        for open_ in (lambda: verify_log(tmp_path / "log"), lambda: SegmentLog(tmp_path / "log")):
            with pytest.raises(LogCorrupt) as info:
                open_()
            err = info.value
            assert (err.segment, err.offset, err.seq) == (seg.name, block.offset, block.first_seq)
            assert "compressed block" in err.message and err.hint


def test_a_segment_with_a_damaged_frame_stays_plain_and_a_rebuild_names_the_record(
    tmp_path: Path,
) -> None:
    # a rebuild trusts a compressed block's checksum for its frames, so a segment is
    # compressed only when every frame holds its own
    directory = tmp_path / "log"
    with SegmentLog(directory, segment_bytes=6000, compress=False) as log:
        for i in range(0, 60, 3):
            log.append([_trace(i), _trace(i + 1), _trace(i + 2)], actor="t")
    seg = list_segments(directory)[1]
    offsets = scan_offsets(seg.path, seg.first_seq, CURRENT)
    data = bytearray(seg.path.read_bytes())
    data[offsets[2] + CURRENT.frame_size + 3] ^= 0x01  # a byte of the third payload rots
    st = seg.path.stat()  # where the segment's seal cannot see it
    seg.path.write_bytes(bytes(data))
    os.utime(seg.path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert not compress_segment(seg, offsets)
    assert packed(seg.path) is None and seg.path.read_bytes() == bytes(data)
    with SegmentLog(directory, writer=False) as log, pytest.raises(LogCorrupt) as info:
        rebuild(log)
    assert (info.value.seq, info.value.offset) == (seg.first_seq + 2, offsets[2])
    assert "checksum mismatch" in info.value.message
    data[offsets[2] + CURRENT.frame_size + 3] ^= 0x01
    seg.path.write_bytes(bytes(data))
    assert compress_segment(seg, offsets) and packed(seg.path) is not None


@pytest.fixture
def small_dictionaries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dictionaries for segments of a few dozen KB, as full-size ones get them."""
    monkeypatch.setattr(blocks, "DICT_MIN", 1)
    monkeypatch.setattr(blocks, "DICT_BYTES2", 2048)


def dicts_key(path: Path) -> tuple[int, int, int, int]:
    """The lengths and checksums of the two dictionaries a segment is stored with."""
    box = Packed(path)
    assert box.zdict is not None and box.hdict is not None
    lc, hc = box.zdict.dict_content, box.hdict.dict_content
    return len(lc), zlib.crc32(lc), len(hc), zlib.crc32(hc)


def _dicts_trained_on(seg: Segment) -> tuple[int, int, int, int]:
    """``dicts_key`` of the dictionaries trained on a sealed segment's own bytes."""
    data = Packed(seg.path).read()
    frames = scan_offsets(seg.path, seg.first_seq, CURRENT)
    skips = payload_skips(data, seg, frames)
    assert skips is not None
    light, heavy = blocks.train(
        blocks.samples(blocks.split_blocks(data, seg.first_seq, frames, skips))
    )
    assert light is not None and heavy is not None
    lc, hc = light.dict_content, heavy.dict_content
    return len(lc), zlib.crc32(lc), len(hc), zlib.crc32(hc)


@pytest.mark.usefixtures("small_dictionaries")
def test_a_sealed_segment_is_compressed_with_dictionaries_of_the_one_before(
    tmp_path: Path,
) -> None:
    recs = _log(tmp_path / "a", 900, segment_bytes=60_000)
    segs = list_segments(tmp_path / "a")[:-1]
    assert len(segs) >= 4
    assert dicts_key(segs[0].path) == _dicts_trained_on(segs[0]), "the first: its own"
    for prev, seg in zip(segs, segs[1:], strict=False):
        assert dicts_key(seg.path) == _dicts_trained_on(prev)
    verify_log(tmp_path / "a")
    with SegmentLog(tmp_path / "a", writer=False) as log:
        assert list(log.read()) == recs


@pytest.mark.usefixtures("small_dictionaries")
def test_a_log_is_stored_the_same_however_often_its_writer_reopens(tmp_path: Path) -> None:
    # a writer trains the next segment's dictionaries ahead; a new writer trains them
    # at its first seal, from the segment before: the same bytes either way
    _log(tmp_path / "one", 900, segment_bytes=60_000)
    clock = TickClock()
    for i in range(0, 900, 3):
        with SegmentLog(tmp_path / "many", segment_bytes=60_000, clock=clock) as log:
            log.append([_trace(i), _trace(i + 1), _trace(i + 2)], actor="t")
    one, many = list_segments(tmp_path / "one"), list_segments(tmp_path / "many")
    assert len(one) >= 4 and packed(one[-2].path) is not None
    for a, b in zip(one, many, strict=True):
        assert a.path.read_bytes() == b.path.read_bytes()


def test_a_rebuild_reads_compressed_and_plain_segments_alike(tmp_path: Path) -> None:
    recs = _log(tmp_path / "log", 90)
    with SegmentLog(tmp_path / "log", writer=False) as log:
        compressed = _snapshots(log)
        assert compressed == _reference(log)
    for seg in list_segments(tmp_path / "log"):
        store_plain(seg.path)
    with SegmentLog(tmp_path / "log", writer=False) as log:
        assert _snapshots(log) == compressed
        assert list(log.read()) == recs


def _reference(log: SegmentLog) -> dict[str, bytes]:
    states = fold(log.read(light=True), {n: m.initial() for n, m in PROJECTIONS.items()})
    return {name: PROJECTIONS[name].snapshot(state) for name, state in states.items()}


# ------------------------------------------------------------------ old logs and the rewrite


def _write_old(directory: Path, recs: list[Record], per_segment: int) -> None:
    """A log whose records are in the old encoding (maps of field names), as an older
    writer left it (plain segments, chained)."""
    directory.mkdir()
    chain = bytes(16)
    for i in range(0, len(recs), per_segment):
        part = recs[i : i + per_segment]
        out = bytearray(segment_header(part[0].seq, chain))
        for r in part:
            frame, chain = encode_frame(r.seq, r.ts, _OLD.encode(r), chain)
            out += frame
        (directory / f"{part[0].seq:020d}.seg").write_bytes(bytes(out))


def _records(n: int) -> list[Record]:
    from ocb_events.schema import ConfigChanged, OutcomeRecorded

    out: list[Record] = []
    for i in range(n):
        ev = (
            _trace(i)
            if i % 3
            else OutcomeRecorded(reward=1.0, source="human", trace_id=f"t{i - 2}")
        )
        if i % 10 == 0:
            ev = ConfigChanged(key=f"k{i}", value=i)
        out.append(Record(seq=i + 1, ts=1000 + i, actor="t", event=ev))
    return out


def test_an_old_log_folds_byte_identically_to_its_records_in_the_new_format(
    tmp_path: Path,
) -> None:
    recs = _records(40)
    _write_old(tmp_path / "old", recs, 15)
    with SegmentLog(tmp_path / "new", segment_bytes=2000) as log:
        for r in recs:
            log.append([r.event], actor=r.actor)
    with (
        SegmentLog(tmp_path / "old", writer=False) as old,
        SegmentLog(tmp_path / "new", writer=False) as new,
    ):
        assert [(r.seq, r.event) for r in old.read()] == [(r.seq, r.event) for r in new.read()]
        assert list(old.read()) == recs
        assert _snapshots(old) == _snapshots(new)
    assert sum(p.stat().st_size for p in (tmp_path / "new").glob("*.seg")) < sum(
        p.stat().st_size for p in (tmp_path / "old").glob("*.seg")
    )


@pytest.mark.parametrize("source", ["old encoding", "golden"])
def test_the_rewrite_keeps_every_record_and_verifies_before_and_after(
    tmp_path: Path, source: str
) -> None:
    directory = tmp_path / "log"
    if source == "golden":
        shutil.copytree(GOLDEN, directory)
    else:
        _write_old(directory, _records(40), 15)
    with SegmentLog(directory, writer=False) as log:
        before, folded = list(log.read()), _snapshots(log)
    verify_log(directory)
    got = rewrite_log(directory)
    verify_log(directory)
    assert got.records == len(before)
    assert not (tmp_path / f"log{REWRITE_SUFFIX}").exists()
    with SegmentLog(directory, writer=False) as log:
        assert list(log.read()) == before
        assert _snapshots(log) == folded
        assert log.chain_of(log.last_seq) == bytes.fromhex(got.new_head[1])
    segs = list_segments(directory)
    assert all(packed(s.path) is not None for s in segs[:-1])
    with SegmentLog(directory) as log:  # a writer opens it and appends on
        log.append([_trace(7)], actor="t")
    verify_log(directory)


@pytest.mark.parametrize("stage", ["built", "checked"])
def test_a_rewrite_that_stops_half_way_leaves_the_old_log_as_it_was(
    tmp_path: Path, stage: str
) -> None:
    directory = tmp_path / "log"
    _write_old(directory, _records(40), 15)
    files = {p.name: p.read_bytes() for p in directory.iterdir() if p.name != "LOCK"}

    def crash(at: str) -> None:
        if at == stage:
            raise KeyboardInterrupt  # the process dies here

    with pytest.raises(KeyboardInterrupt):
        rewrite_log(directory, step=crash)
    assert {p.name: p.read_bytes() for p in directory.iterdir() if p.name != "LOCK"} == files
    verify_log(directory)
    with SegmentLog(directory, writer=False) as log:
        assert list(log.read()) == _records(40)
    got = rewrite_log(directory)  # the next rewrite starts over and finishes
    assert got.records == 40
    assert not (tmp_path / f"log{REWRITE_SUFFIX}").exists()
    verify_log(directory)


@settings(max_examples=10)
@given(recs=st.lists(any_record, min_size=1, max_size=6))
def test_the_rewrite_of_any_records_keeps_them(
    tmp_path_factory: pytest.TempPathFactory, recs: list[Record]
) -> None:
    directory = tmp_path_factory.mktemp("rw") / "log"
    renumbered = [msgspec.structs.replace(r, seq=i + 1, ts=i) for i, r in enumerate(recs)]
    directory.mkdir()
    frames, _ = frame_records(renumbered, bytes(16))
    (directory / f"{1:020d}.seg").write_bytes(segment_header(1, bytes(16)) + b"".join(frames))
    rewrite_log(directory)
    with SegmentLog(directory, writer=False) as log:
        assert list(log.read()) == renumbered


def test_a_record_in_a_compressed_segment_is_redacted_like_any_other(tmp_path: Path) -> None:
    from ocb_events.schema import ContentForgotten

    directory = tmp_path / "log"
    recs = _log(directory)
    victim = recs[1]
    assert packed(list_segments(directory)[0].path) is not None
    forgotten = msgspec.structs.replace(victim, event=_trace(1000))
    with SegmentLog(directory) as log:
        before = log.chain_of(log.last_seq)
        log.redact({victim.seq: encode_record(forgotten)})
        log.append([ContentForgotten(what="a test", seqs=(victim.seq,))], actor="t")
        assert log.chain_of(len(recs)) == before, "redaction keeps the chain"
    verify_log(directory)
    with SegmentLog(directory, writer=False) as log:
        got = list(log.read(1, len(recs)))
    assert got == [forgotten if r.seq == victim.seq else r for r in recs]
