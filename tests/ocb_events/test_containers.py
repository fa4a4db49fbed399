"""The containers of a compressed segment (``ocb_events.blocks``): ``OCBSEGZ2`` keeps
every block as a light part (records without their trace bodies, behind a table of
where each payload sits) and a heavy part (those bodies, ``ocb_events.bodies``), and
gives back the segment's own bytes; a rebuild reads only the light parts. ``OCBSEGZ1``
still reads, and the rewrite of a log moves it to the new container."""

from __future__ import annotations

import os
import struct
import tempfile
import zlib
from collections.abc import Iterable
from itertools import chain
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from ocb_events import blocks, segments
from ocb_events.blocks import MAGIC, MAGIC2, Packed, pack, pack_z1
from ocb_events.bodies import EMPTY_BIN, body_at
from ocb_events.codec import encode_record, fold_decoder, fold_run_decoder
from ocb_events.errors import LogCorrupt
from ocb_events.frames import (
    CURRENT,
    REDACTED,
    ZERO_CHAIN,
    digest,
    encode_frame,
    scan_offsets,
    segment_header,
)
from ocb_events.log import SegmentLog, verify_log
from ocb_events.marks import read_seals, write_seals
from ocb_events.parts import Candidate, QueryParams, SeedHit, Step
from ocb_events.recode import rewrite_log
from ocb_events.rewrite import compress_segment, seal_of
from ocb_events.schema import Event, OutcomeRecorded, QueryTraced, Record
from ocb_events.segments import (
    Segment,
    list_segments,
    packed,
    payload_skips,
    read_body_runs,
    read_runs,
)
from projections import PROJECTIONS, ROUTES
from replay import fold, rebuild
from replay.trace_rows import read_rows
from tests.strategies import any_event, query_traced

_TAGS = frozenset().union(*ROUTES.values())
_ONE = fold_decoder(_TAGS)
_RUN = fold_run_decoder(_TAGS)
_events = st.lists(st.one_of(query_traced(), query_traced(), any_event), min_size=1, max_size=12)
_SEGMENTS = {
    "events": _events,
    "redact": st.sets(st.integers(0, 11), max_size=3),
    "block_bytes": st.sampled_from([1, 700, 3000, 1 << 20]),
    "span": st.tuples(st.integers(1, 12), st.integers(0, 12)),
}
"""A segment's events, those redacted, the container's block size, and a range of seqs
(its first, and how many more) to read."""


def _segment(events: list[Event], redact: set[int]) -> bytes:
    """A plain segment (first seq 1) of ``events``, those at ``redact`` redacted (their
    payload replaced, the original's digest kept)."""
    chain_, out = ZERO_CHAIN, [segment_header(1, ZERO_CHAIN)]
    for i, ev in enumerate(events):
        rec = Record(seq=i + 1, ts=10 * i, actor="t", event=ev)
        payload, flags = encode_record(rec), 0
        if i in redact:
            other = msgspec.structs.replace(rec, actor="forgotten")
            payload, flags = digest(payload) + encode_record(other), REDACTED
        frame, chain_ = encode_frame(rec.seq, rec.ts, payload, chain_, flags=flags)
        out.append(frame)
    return b"".join(out)


def _store(directory: Path, data: bytes, container: bytes, block_bytes: int) -> Segment:
    """Write a segment's bytes ``data`` in ``container`` (a magic) as segment 1."""
    seg = Segment(1, directory / "00000000000000000001.seg")
    seg.path.write_bytes(data)
    offsets = scan_offsets(seg.path, 1, CURRENT)
    skips = payload_skips(data, seg, offsets)
    assert skips is not None
    if container == MAGIC2:
        seg.path.write_bytes(pack(data, 1, offsets, skips, block_bytes=block_bytes))
    else:
        seg.path.write_bytes(pack_z1(data, 1, offsets, block_bytes=block_bytes))
    return seg


def _span(span: tuple[int, int], n: int) -> tuple[int, int]:
    """The seqs ``lo..hi`` of a drawn range, within a segment of ``n`` records."""
    return min(span[0], n), min(span[0] + span[1], n)


def _runs(seg: Segment, lo: int, hi: int, *, light: bool) -> list[tuple[Any, int]]:
    """The records ``lo..hi`` of a segment as a rebuild decodes them, with the segment
    offsets the reader names for each."""

    def decode(views: list[memoryview], offsets: list[int], name: str) -> Iterable[Any]:
        return list(zip(_RUN(views, offsets, name), offsets, strict=True))

    got = read_runs(seg, CURRENT, CURRENT.header_size, 1, lo, hi, decode, [seg], light=light)
    return list(chain.from_iterable(got))


@settings(max_examples=60, deadline=None)
@given(**_SEGMENTS)
def test_either_container_gives_back_the_segment_and_the_light_path_the_same_records(
    events: list[Event], redact: set[int], block_bytes: int, span: tuple[int, int]
) -> None:
    data = _segment(events, redact)
    lo, hi = _span(span, len(events))
    with tempfile.TemporaryDirectory() as tmp:
        for container in (MAGIC, MAGIC2):
            seg = _store(Path(tmp), data, container, block_bytes)
            box = Packed(seg.path)
            assert seg.path.read_bytes()[:8] == container and box.v2 == (container == MAGIC2)
            assert box.read() == data
            for i, b in enumerate(box.blocks):
                assert box.read(i, i) == data[b.offset : b.end]
            full = _runs(seg, lo, hi, light=False)
            assert [r.seq for r, _ in full] == list(range(lo, hi + 1))
            assert _runs(seg, lo, hi, light=True) == full


def _body_runs(seg: Segment, lo: int, hi: int) -> list[tuple[bytes, int, bool]]:
    """The records ``lo..hi`` of a segment as a reader of trace bodies takes them
    (``read_body_runs``): each payload made whole again from its light payload and its
    bin, its segment offset, and whether its body came apart."""

    def decode(
        views: list[memoryview], offsets: list[int], name: str, bins: list[Any] | None
    ) -> Iterable[Any]:
        got = []
        for i, view in enumerate(views):
            body = None if bins is None else bins[i]
            if body is None:
                got.append((bytes(view), offsets[i], False))
            else:
                assert bytes(view[-len(EMPTY_BIN) :]) == EMPTY_BIN
                got.append((bytes(view[: -len(EMPTY_BIN)]) + bytes(body), offsets[i], True))
        return got

    runs = read_body_runs(seg, CURRENT, CURRENT.header_size, 1, lo, hi, decode, [seg])
    return list(chain.from_iterable(runs))


@settings(max_examples=60, deadline=None)
@given(**_SEGMENTS)
def test_a_reader_of_bodies_takes_them_apart_and_reads_every_payload_as_stored(
    events: list[Event], redact: set[int], block_bytes: int, span: tuple[int, int]
) -> None:
    """Every container and a plain segment: the payloads, their offsets, and in the
    new container each compact trace's body apart from its light payload."""
    data = _segment(events, redact)
    lo, hi = _span(span, len(events))

    def whole(views: list[memoryview], offsets: list[int], name: str) -> Iterable[Any]:
        return [(bytes(v), o) for v, o in zip(views, offsets, strict=True)]

    with tempfile.TemporaryDirectory() as tmp:
        plain = Segment(1, Path(tmp) / "plain.seg")
        plain.path.write_bytes(data)
        start = CURRENT.header_size
        want = list(
            chain.from_iterable(read_runs(plain, CURRENT, start, 1, lo, hi, whole, [plain]))
        )
        assert [(p, o) for p, o, _ in _body_runs(plain, lo, hi)] == want
        for container in (MAGIC, MAGIC2):
            seg = _store(Path(tmp), data, container, block_bytes)
            got = _body_runs(seg, lo, hi)
            assert [(p, o) for p, o, _ in got] == want
            apart = [cut for _, _, cut in got]
            traces = [p[0] == 0x85 for p, _ in want]
            assert apart == (traces if container == MAGIC2 else [False] * len(want))


def test_a_reader_of_bodies_names_a_damaged_heavy_part(tmp_path: Path) -> None:
    _log(tmp_path / "log")
    seg = list_segments(tmp_path / "log")[1]
    b = Packed(seg.path).blocks[0]
    with SegmentLog(tmp_path / "log", writer=False) as log:
        fine = list(read_rows(log, 1, log.last_seq, packed=True))
        assert [r.seq for r in fine] == list(range(1, log.last_seq + 1))
        _rot(seg.path, b.at + (b.light + b.stored) // 2)
        with pytest.raises(LogCorrupt) as info:
            list(read_rows(log, 1, log.last_seq, packed=True))
    err = info.value
    assert (err.segment, err.offset, err.seq) == (seg.name, b.offset, b.first_seq)
    assert "in the heavy part" in err.message


@settings(max_examples=60, deadline=None)
@given(events=_events)
def test_a_body_is_taken_out_only_where_the_light_record_folds_the_same(
    events: list[Event],
) -> None:
    for i, ev in enumerate(events):
        payload = encode_record(Record(seq=i + 1, ts=i, actor="a", event=ev))
        at = body_at(payload)
        if payload[0] == 0x85:
            assert at is not None, "every compact trace gives up its body"
        if at is None:
            continue
        light = payload[:at] + EMPTY_BIN
        assert _ONE(light) == _ONE(payload)
        whole = msgspec.msgpack.decode(payload)
        assert msgspec.msgpack.decode(light) == {**whole, "z": b""}
    # a trace whose body is not its last value keeps it
    rec = msgspec.msgpack.decode(encode_record(Record(seq=1, ts=1, actor="a", event=events[0])))
    if isinstance(rec, dict) and "z" in rec:
        moved = {"z": rec.pop("z"), **rec}
        assert body_at(msgspec.msgpack.encode(moved)) is None


def _trace(i: int) -> QueryTraced:
    cands = tuple(
        Candidate(target=f"n{i % 7}.md::{k}", weight=0.1 * k + i, logit=0.5 * k, tier="habitual")
        for k in range(5)
    )
    step = Step(hop=0, node=f"n{i % 7}.md::0", candidates=cands, stop_logit=-1.5, chosen="<STOP>")
    params = QueryParams(
        mode="weight", max_hops=3, max_fired=5, max_context_chars=2000, max_seeds=5,
        tau=1.0, damping=0.9, reflex=0.6, habitual=0.2, inhibitory=-0.2, alpha=0.5,
        fire_threshold=0.1, branch=3,
    )  # fmt: skip
    seed = SeedHit(node_id=f"n{i % 7}.md::0", score=0.25, lexical=1 / 3, vector=i)
    return QueryTraced(
        trace_id=f"t{i}", query=f"question {i}", seeds=(seed,), steps=(step,),
        fired=(f"n{i % 7}.md::0",), stop_reason="stop", context_chars=100 + i, params=params,
    )  # fmt: skip


def _log(directory: Path, n: int = 90) -> list[Record]:
    """A log of traces and other records over several compressed segments."""
    recs: list[Record] = []
    with SegmentLog(directory, segment_bytes=6000) as log:
        for i in range(0, n, 3):
            recs += log.append([_trace(i), _trace(i + 1), _trace(i + 2)], actor="t")
            recs += log.append(
                [OutcomeRecorded(trace_id=f"t{i}", reward=0.5, source="human")], actor="t"
            )
    return recs


def _snapshots(states: dict[str, Any]) -> dict[str, bytes]:
    return {name: PROJECTIONS[name].snapshot(state) for name, state in states.items()}


def test_a_rebuild_reads_the_light_parts_and_folds_as_the_records_do(tmp_path: Path) -> None:
    recs = _log(tmp_path / "log")
    segs = list_segments(tmp_path / "log")
    assert all(Packed(s.path).v2 for s in segs[:-1]), "sealed segments take the new container"
    with SegmentLog(tmp_path / "log", writer=False) as log:
        assert list(log.read()) == recs
        want = fold(log.read(light=True), {n: m.initial() for n, m in PROJECTIONS.items()})
        assert _snapshots(rebuild(log)) == _snapshots(want)
    for seg in segs[:-1]:  # without their heavy parts, a rebuild still folds the same
        _drop_heavy(seg.path)
    with SegmentLog(tmp_path / "log", writer=False) as log:
        assert _snapshots(rebuild(log)) == _snapshots(want)


def _drop_heavy(path: Path) -> None:
    """Overwrite every heavy part of a container with zeros (same size and mtime)."""
    box = Packed(path)
    data = bytearray(path.read_bytes())
    for b in box.blocks:
        data[b.at + b.light : b.at + b.stored] = bytes(b.stored - b.light)
    st_ = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st_.st_atime_ns, st_.st_mtime_ns))


def _rot(path: Path, at: int) -> None:
    """Flip a byte of a file where its seal cannot see it (same size and mtime)."""
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    st_ = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st_.st_atime_ns, st_.st_mtime_ns))


@pytest.mark.parametrize("part", ["light", "heavy"])
def test_a_damaged_part_of_a_block_is_found_and_named(tmp_path: Path, part: str) -> None:
    _log(tmp_path / "log")
    seg = list_segments(tmp_path / "log")[1]
    b = Packed(seg.path).blocks[0]
    assert b.stored > b.light > 0
    _rot(seg.path, b.at + b.light // 2 if part == "light" else b.at + (b.light + b.stored) // 2)
    with pytest.raises(LogCorrupt) as info:
        verify_log(tmp_path / "log")
    err = info.value
    assert (err.segment, err.offset, err.seq) == (seg.name, b.offset, b.first_seq)
    assert f"in the {part} part" in err.message and "compressed block" in err.message
    with SegmentLog(tmp_path / "log", writer=False) as log:
        if part == "light":
            with pytest.raises(LogCorrupt) as info:
                rebuild(log)
            assert (info.value.segment, info.value.seq) == (seg.name, b.first_seq)
        else:
            rebuild(log)  # a rebuild does not read the heavy parts
            with pytest.raises(LogCorrupt):
                list(log.read(b.first_seq, b.first_seq))


def _relight(path: Path, edit: Any, *, table_crc: bool) -> Packed:
    """Rewrite the light part of a container's first block through ``edit`` (on its
    decompressed bytes), its checksum fixed (and the table's, with ``table_crc``)."""
    box = Packed(path)
    b, data = box.blocks[0], path.read_bytes()
    light = bytearray(blocks.zstd.decompress(data[b.at : b.at + b.light], zstd_dict=box.zdict))
    size = box.light(b, data[b.at : b.at + b.light])[1].size
    edit(light)
    z = blocks.zstd.compress(bytes(light), 3, zstd_dict=box.zdict)
    fixed = msgspec.structs.replace(
        b,
        light=len(z),
        stored=len(z) + b.stored - b.light,
        crc=zlib.crc32(z),
        table_crc=zlib.crc32(light[:size]) if table_crc else b.table_crc,
    )
    return _with_block(path, box, fixed, z + data[b.at + b.light : b.at + b.stored])


def _with_block(path: Path, box: Packed, b: blocks.Block, stored: bytes) -> Packed:
    """The container at ``path`` with its first block's entry and bytes replaced."""
    data = path.read_bytes()
    head = blocks._HEAD2.unpack_from(data)
    n, first = head[2], box.blocks[0]
    entries = bytearray(data[blocks._HEAD2.size : blocks._HEAD2.size + n * blocks._ENTRY2.size])
    fields = (b.first_seq, b.offset, b.length, b.frames, b.light, b.stored, b.crc, b.heavy_crc)
    blocks._ENTRY2.pack_into(entries, 0, *fields, b.table_crc)
    start = blocks._HEAD2.size + len(entries) + head[4] + head[6]
    new_head = blocks._HEAD2.pack(*head[:8], zlib.crc32(entries))
    rest = data[start + first.stored :]
    path.write_bytes(new_head + bytes(entries) + data[blocks._HEAD2.size + len(entries) : start])
    with open(path, "ab") as fh:
        fh.write(stored + rest)
    return Packed(path)


def _grow_first_frame(light: bytearray) -> None:
    struct.pack_into("<I", light, 12, struct.unpack_from("<I", light, 12)[0] + 1)


def _shift_first_payload(light: bytearray) -> None:
    n = struct.unpack_from("<I", light, 0)[0]
    light[12 + 4 * n] += 1


@pytest.mark.parametrize(
    ("edit", "table_crc", "why"),
    [
        (_shift_first_payload, False, "damaged table: checksum mismatch"),
        (_grow_first_frame, True, "damaged table: frame lengths do not add up"),
    ],
)
def test_a_damaged_table_of_a_block_is_found_and_named(
    tmp_path: Path, edit: Any, table_crc: bool, why: str
) -> None:
    _log(tmp_path / "log")
    seg = list_segments(tmp_path / "log")[1]
    box = _relight(seg.path, edit, table_crc=table_crc)
    b = box.blocks[0]
    for read in (lambda: box.read(), lambda: box.light(b, _stored(seg.path, b)[: b.light])):
        with pytest.raises(LogCorrupt) as info:
            read()
        err = info.value
        assert (err.segment, err.offset, err.seq) == (seg.name, 0, seg.first_seq)
        assert why in err.message


def _stored(path: Path, b: blocks.Block) -> bytes:
    return path.read_bytes()[b.at : b.at + b.stored]


def test_a_damaged_block_table_of_the_container_is_found(tmp_path: Path) -> None:
    _log(tmp_path / "log")
    seg = list_segments(tmp_path / "log")[1]
    _rot(seg.path, blocks._HEAD2.size + 9)  # the first entry's segment offset
    with pytest.raises(LogCorrupt) as info:
        Packed(seg.path)
    assert info.value.segment == seg.name and "table" in info.value.message


def _to_z1(directory: Path) -> None:
    """Store every compressed segment of a log in the older container, resealed."""
    seals = read_seals(directory)
    for seg in list_segments(directory):
        box = packed(seg.path)
        if box is None:
            continue
        data = box.read()
        seg.path.write_bytes(
            pack_z1(data, seg.first_seq, scan_offsets(seg.path, seg.first_seq, CURRENT))
        )
        old = seals[seg.first_seq]
        seals[seg.first_seq] = seal_of(
            seg.path, old.first_seq, old.last_seq, old.last_ts, old.chain
        )
    write_seals(directory, seals)


def test_a_log_of_the_older_container_reads_and_the_rewrite_moves_it_to_the_new(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "log"
    recs = _log(directory)
    _to_z1(directory)
    segs = list_segments(directory)
    assert all(s.path.read_bytes()[:8] == MAGIC for s in segs[:-1])
    inside = [Packed(s.path).read() for s in segs[:-1]]
    verify_log(directory)
    with SegmentLog(directory, writer=False) as log:
        assert list(log.read()) == recs
        assert [log.ts_of(r.seq) for r in recs] == [r.ts for r in recs]
        chains = [log.chain_of(r.seq) for r in recs]
        before = _snapshots(rebuild(log))
    done = rewrite_log(directory)
    assert done.first_changed == 0 and done.records == len(recs)
    segs = list_segments(directory)
    assert all(s.path.read_bytes()[:8] == MAGIC2 for s in segs[:-1])
    assert [Packed(s.path).read() for s in segs[:-1]] == inside, "the same bytes inside"
    verify_log(directory)
    with SegmentLog(directory, writer=False) as log:
        assert list(log.read()) == recs
        assert [log.ts_of(r.seq) for r in recs] == [r.ts for r in recs]
        assert [log.chain_of(r.seq) for r in recs] == chains
        assert _snapshots(rebuild(log)) == before


def test_a_segment_whose_parts_would_not_give_it_back_stays_plain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "log"
    with SegmentLog(directory, segment_bytes=6000, compress=False) as log:
        for i in range(0, 30, 3):
            log.append([_trace(i), _trace(i + 1), _trace(i + 2)], actor="t")
    seg = list_segments(directory)[0]
    data = seg.path.read_bytes()
    real = blocks.split

    def lossy(*args: Any) -> Any:  # a split that drops a byte of a body
        parts = real(*args)
        return msgspec.structs.replace(parts, heavy=parts.heavy[:-1] + b"?")

    monkeypatch.setattr(blocks, "split", lossy)
    assert not compress_segment(seg, scan_offsets(seg.path, seg.first_seq, CURRENT))
    assert seg.path.read_bytes() == data
    monkeypatch.undo()
    assert compress_segment(seg, scan_offsets(seg.path, seg.first_seq, CURRENT))
    assert Packed(seg.path).read() == data


# ------------------------------------------------------------------ a segment renamed over


def _rename_over(path: Path, other: bytes) -> None:
    tmp = path.with_name(path.name + ".rewrite")
    tmp.write_bytes(other)
    os.replace(tmp, path)


def _renamed_over_on_open(
    monkeypatch: pytest.MonkeyPatch, path: Path, other: bytes, *, packed: bool
) -> None:
    """The writer renames a file holding ``other`` over ``path`` (as a seal, a
    redaction or a repair does) just after a reader opens it: after
    ``ocb_events.segments`` opens it (``packed``: after a block table is read)."""
    done: list[bool] = []
    if packed:
        real_init = Packed.__init__

        def init(self: Packed, *args: Any, **kw: Any) -> None:
            real_init(self, *args, **kw)
            if not done:
                done.append(True)
                _rename_over(path, other)

        monkeypatch.setattr(Packed, "__init__", init)
        return
    real = open

    def opening(file: Any, *args: Any, **kw: Any) -> Any:
        fh = real(file, *args, **kw)
        if Path(file) == path and not done:
            done.append(True)
            _rename_over(path, other)
        return fh

    monkeypatch.setattr(segments, "open", opening, raising=False)


@pytest.mark.parametrize("light", [False, True])
@pytest.mark.parametrize("was", ["plain", "packed"])
def test_a_reader_reads_the_segment_it_opened_though_another_is_renamed_over_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, was: str, light: bool
) -> None:
    data = _segment([_trace(i) for i in range(40)], set())
    (tmp_path / "other").mkdir()
    seg = _store(tmp_path, data, MAGIC2, 3000)
    stored = seg.path.read_bytes()
    if was == "plain":  # the writer compresses the segment a reader opened plain
        seg.path.write_bytes(data)
        other = stored
    else:  # the writer rewrites a compressed segment in other blocks
        other = _store(tmp_path / "other", data, MAGIC2, 700).path.read_bytes()
        assert other != stored
    plain = seg
    want = _runs(plain, 1, 40, light=light)
    assert [r.seq for r, _ in want] == list(range(1, 41))
    _renamed_over_on_open(monkeypatch, plain.path, other, packed=was == "packed")
    assert _runs(plain, 1, 40, light=light) == want
    assert plain.path.read_bytes() == other  # it was renamed over, read all the same


@pytest.mark.parametrize("was", ["plain", "packed"])
def test_one_record_reads_from_the_segment_opened_though_another_is_renamed_over_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, was: str
) -> None:
    data = _segment([_trace(i) for i in range(40)], set())
    (tmp_path / "other").mkdir()
    seg = _store(tmp_path, data, MAGIC2, 3000)
    other = _store(tmp_path / "other", data, MAGIC2, 700).path.read_bytes()
    if was == "plain":
        seg.path.write_bytes(data)
    at = scan_offsets(tmp_path / "other" / seg.path.name, 1, CURRENT)[25]
    _renamed_over_on_open(monkeypatch, seg.path, other, packed=was == "packed")
    assert segments.read_at(seg.path, at, 64) == data[at : at + 64]
