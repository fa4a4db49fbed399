"""Repairing a damaged log: intact records are kept, damaged, lost or tampered ones
(that do not match their hash chain) become tombstones that keep their seq, and the
hash chain is recomputed from the first change."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from ocb_events.clock import TickClock
from ocb_events.codec import encode_record
from ocb_events.errors import LogCorrupt, LogTruncated, LogWriteFailed
from ocb_events.frames import LENGTH_MASK, LOST, REDACTED, ZERO_CHAIN, digest, segment_header
from ocb_events.integrity import UNNAMED_REDACTION
from ocb_events.links import UNCHECKED, UNCONFIRMED, UNLINKED
from ocb_events.log import SegmentLog, frame_records, verify_log
from ocb_events.repair import repair_log
from ocb_events.rewrite import replace_segment
from ocb_events.salvage import Kept, salvage
from ocb_events.schema import ConfigChanged, ContentForgotten, Record, RecordLost
from ocb_events.segments import list_segments
from tests.ocb_events.support import config_events, seg_files, snapshot
from tests.ocb_events.tamper import (
    CHAIN_AT,
    FIELDS,
    PAYLOAD_AT,
    edit_frame,
    frame_of,
    replace_text,
    stored_chain,
    tamper,
)

BATCHES = [config_events(i % 3 + 1, f"b{i}-") for i in range(14)]


def _build(directory: Path, segment_bytes: int = 1 << 20) -> list[Record]:
    recs: list[Record] = []
    with SegmentLog(directory, clock=TickClock(), segment_bytes=segment_bytes) as log:
        for batch in BATCHES:
            recs.extend(log.append(batch, actor="t"))
    return recs


def _offset_of(directory: Path, seq: int) -> tuple[Path, int]:
    with SegmentLog(directory, writer=False) as log:
        seg = next(s for s in reversed(log._segments) if s.first_seq <= seq)
        return seg.path, log._offsets(seg)[seq - seg.first_seq]


def _offset_of_any(directory: Path, seq: int) -> tuple[Path, int]:
    """Where record ``seq``'s frame starts, in a log that may no longer open."""
    path, off, _ = frame_of(directory, seq)
    return path, off


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x5A
    path.write_bytes(bytes(data))


def _chains(directory: Path) -> list[bytes | None]:
    with SegmentLog(directory, writer=False) as log:
        return [log.chain_of(s) for s in range(1, log.last_seq + 1)]


def _after_repair(directory: Path, recs: list[Record], lost: set[int]) -> list[Record]:
    """The repaired log holds every record but the lost ones, which are tombstones."""
    with SegmentLog(directory, writer=False) as log:
        got = list(log.read())
    assert [r.seq for r in got] == list(range(1, len(got) + 1))
    for r in got:
        if r.seq in lost:
            assert isinstance(r.event, RecordLost) and r.actor == "repair"
        else:
            assert r == recs[r.seq - 1]
    verify_log(directory)
    return got


def test_a_damaged_record_in_the_middle_becomes_a_tombstone(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    recs = _build(directory)
    before = _chains(directory)
    path, off = _offset_of(directory, 9)
    _flip(path, off + 60)  # inside the payload
    with pytest.raises(LogCorrupt) as info:
        SegmentLog(directory)
    assert info.value.seq == 9
    report = repair_log(directory)
    assert (report.lost, report.torn_bytes, report.rebased_from) == ([(9, 9)], 0, 9)
    _after_repair(directory, recs, {9})
    after = _chains(directory)
    assert after[:8] == before[:8], "the history before the damage keeps its chain"
    assert all(a != b for a, b in zip(after[8:], before[8:], strict=True)), "a new history"
    with SegmentLog(directory, clock=TickClock()) as log:
        assert log.append(config_events(1, "after"), actor="t")[0].seq == len(recs) + 1


def test_a_damaged_header_loses_only_its_record(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    recs = _build(directory)
    path, off = _offset_of(directory, 12)
    _flip(path, off + 5)  # the length word: the frame's end is unknown
    report = repair_log(directory)
    assert report.lost == [(12, 12)]
    _after_repair(directory, recs, {12})


def test_bit_rot_in_the_last_record_is_corruption_and_repairs_to_a_tombstone(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "log"
    recs = _build(directory)
    last = recs[-1].seq
    path, off = _offset_of(directory, last)
    _flip(path, path.stat().st_size - 3)
    for tail in ("current", "missing"):
        if tail == "missing":
            (directory / "TAIL").unlink()
        with pytest.raises(LogCorrupt) as info:
            SegmentLog(directory)
        assert (info.value.seq, info.value.offset) == (last, off), "not a torn write"
    report = repair_log(directory)
    assert report.lost == [(last, last)] and report.torn_bytes == 0
    _after_repair(directory, recs, {last})


@pytest.mark.parametrize("how", ["truncated", "deleted"])
def test_records_lost_from_the_end_keep_their_seqs(tmp_path: Path, how: str) -> None:
    directory = tmp_path / "log"
    recs = _build(directory, segment_bytes=600)
    segs = seg_files(directory)
    assert len(segs) >= 3
    last = segs[-1]
    first_lost = int(last.name[:-4])
    if how == "deleted":
        last.unlink()
    else:
        _, off = _offset_of(directory, first_lost + 1)
        last.write_bytes(last.read_bytes()[: off + 7])
        first_lost += 1
    with pytest.raises(LogTruncated):
        SegmentLog(directory)
    report = repair_log(directory)
    assert report.lost == [(first_lost, len(recs))]
    _after_repair(directory, recs, set(range(first_lost, len(recs) + 1)))
    with SegmentLog(directory, clock=TickClock()) as log:
        assert log.append(config_events(1), actor="t")[0].seq == len(recs) + 1, "no seq reused"


def test_a_missing_middle_segment_becomes_tombstones(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    recs = _build(directory, segment_bytes=600)
    segs = seg_files(directory)
    gone = segs[1]
    lost = range(int(gone.name[:-4]), int(segs[2].name[:-4]))
    gone.unlink()
    report = repair_log(directory)
    assert report.lost == [(lost[0], lost[-1])]
    _after_repair(directory, recs, set(lost))


def test_seqs_the_snapshots_vouch_for_become_tombstones(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    recs = _build(directory)
    (directory / "TAIL").unlink()
    report = repair_log(directory, held=len(recs) + 4)
    assert report.lost == [(len(recs) + 1, len(recs) + 4)]
    got = _after_repair(directory, recs, set(range(len(recs) + 1, len(recs) + 5)))
    assert len(got) == len(recs) + 4


def test_a_torn_tail_nothing_claims_is_dropped_and_a_healthy_log_is_left_alone(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "log"
    recs = _build(directory)
    pristine = snapshot(directory)
    report = repair_log(directory)
    assert not report.changed and snapshot(directory) == pristine
    tail = (directory / "TAIL").read_bytes()
    with SegmentLog(directory, clock=TickClock()) as log:
        log.append(config_events(3, "torn"), actor="t")
    seg = seg_files(directory)[-1]
    seg.write_bytes(seg.read_bytes()[:-10])
    (directory / "TAIL").write_bytes(tail)  # killed before the commit
    report = repair_log(directory)
    assert report.lost == [] and report.torn_bytes > 0
    _after_repair(directory, recs, set())
    assert not repair_log(directory).changed, "a second repair has nothing to do"


@settings(max_examples=25)
@given(
    damage=st.lists(
        st.tuples(st.sampled_from(["flip", "truncate", "delete"]), st.integers(0, 10**6)),
        min_size=1,
        max_size=3,
    )
)
def test_any_damage_repairs_to_a_log_that_opens_verifies_and_keeps_every_intact_record(
    tmp_path_factory: pytest.TempPathFactory, damage: list[tuple[str, int]]
) -> None:
    directory = tmp_path_factory.mktemp("log") / "log"
    recs = _build(directory, segment_bytes=700)
    for how, at in damage:
        segs = seg_files(directory)
        seg = segs[at % len(segs)]
        data = seg.read_bytes()
        if how == "delete" and len(segs) > 1:
            seg.unlink()
        elif how == "truncate":
            seg.write_bytes(data[: at % (len(data) + 1)])
        elif data:
            i = at % len(data)
            seg.write_bytes(data[:i] + bytes([data[i] ^ 0xA5]) + data[i + 1 :])
    repair_log(directory)
    with SegmentLog(directory, clock=TickClock()) as log:
        got = list(log.read())
        assert [r.seq for r in got] == list(range(1, len(got) + 1))
        for r in got:
            assert isinstance(r.event, RecordLost) or r == recs[r.seq - 1]
        log.append(config_events(1, "after"), actor="t")
    verify_log(directory)
    assert not repair_log(directory).changed


# --------------------------------------------------------------------------- tampering


def _frames(directory: Path) -> dict[int, Kept]:
    """Every whole frame of the log, by seq (payload bytes as stored)."""
    walk = salvage(list_segments(directory), 0)
    return {e.seq: e for e in walk.flat() if isinstance(e, Kept)}


def _key_of(recs: list[Record], seq: int) -> bytes:
    event = recs[seq - 1].event
    assert isinstance(event, ConfigChanged)
    return event.key.encode()


def test_a_record_edited_with_its_checksum_fixed_becomes_a_named_tombstone(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "log"
    recs = _build(directory, segment_bytes=700)
    before, frames = _chains(directory), _frames(directory)
    key = _key_of(recs, 17)
    replace_text(directory, 17, key, key[:-1] + b"X", rechain=False)
    with pytest.raises(LogCorrupt, match="hash chain broken") as info:
        verify_log(directory)
    assert info.value.seq == 17
    report = repair_log(directory)
    assert (report.lost, report.tampered, report.rebased_from) == ([(17, 17)], [(17, 17)], 17)
    assert report.unconfirmed == [16], "seq 17 no longer links to it: it, or 17, was edited"
    got = _after_repair(directory, recs, {17})
    lost = got[16].event
    assert isinstance(lost, RecordLost) and lost.reason == UNLINKED
    after, kept = _chains(directory), _frames(directory)
    assert after[:16] == before[:16], "the history before the edit keeps its chain"
    assert all(kept[s].payload == frames[s].payload for s in kept if s != 17), "byte for byte"
    assert not repair_log(directory).changed


def test_an_edit_that_fixes_its_own_chain_value_tombstones_the_record_after_it(
    tmp_path: Path,
) -> None:
    """The next record no longer links, and nothing in the log tells which of the two
    changed: the one that does not link becomes a tombstone, and the edited one keeps
    the chain value its editor wrote (not a fresh one), so a head kept elsewhere at or
    after it shows the rewrite."""
    directory = tmp_path / "log"
    recs = _build(directory)
    key = _key_of(recs, 17)
    replace_text(directory, 17, key, key[:-1] + b"X", rechain=True)
    forged = stored_chain(directory, 17)
    with pytest.raises(LogCorrupt, match="hash chain broken") as info:
        verify_log(directory)
    assert info.value.seq == 18
    report = repair_log(directory)
    assert (report.lost, report.tampered, report.rebased_from) == ([(18, 18)], [(18, 18)], 18)
    assert report.unconfirmed == [17], "named: it or the record after it was edited"
    assert _chains(directory)[16] == forged, "kept as its editor left it, not blessed anew"
    verify_log(directory)


def test_an_edited_record_never_gets_a_fresh_chain(tmp_path: Path) -> None:
    """Behind an earlier tombstone every kept record gets a new chain value: one that the
    record after it does not confirm becomes a tombstone too."""
    directory = tmp_path / "log"
    recs = _build(directory)
    key = _key_of(recs, 17)
    replace_text(directory, 17, key, key[:-1] + b"X", rechain=True)
    path, off = _offset_of_any(directory, 3)
    _flip(path, off + 60)  # bit rot in the payload of seq 3
    report = repair_log(directory)
    assert report.lost == [(3, 3), (17, 18)] and report.tampered == [(17, 18)]
    assert report.unconfirmed == []
    got = _after_repair(directory, recs, {3, 17, 18})
    assert isinstance(got[16].event, RecordLost) and got[16].event.reason == UNCONFIRMED


@pytest.mark.parametrize("where", ["middle", "end of a segment"])
def test_a_changed_chain_value_alone_loses_no_record(tmp_path: Path, where: str) -> None:
    """The next record links from the chain the record's content gives: its content is
    confirmed, and only its chain value is written again."""
    directory = tmp_path / "log"
    recs = _build(directory, segment_bytes=700)
    seq = 17 if where == "middle" else int(seg_files(directory)[1].name[:-4]) - 1
    tamper(directory, seq, "chain")
    with pytest.raises(LogCorrupt, match="hash chain broken"):
        verify_log(directory)
    report = repair_log(directory)
    assert (report.lost, report.rebased_from) == ([], seq)
    _after_repair(directory, recs, set())


def test_the_record_after_a_damaged_one_is_checked_against_the_chain_left_in_its_header(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "log"
    recs = _build(directory)
    key = _key_of(recs, 18)
    replace_text(directory, 18, key, key[:-1] + b"X", rechain=False)
    path, off = _offset_of_any(directory, 17)
    _flip(path, off + 60)  # seq 17 damaged in its payload: its chain value still reads
    report = repair_log(directory)
    assert report.lost == [(17, 18)] and report.tampered == [(18, 18)]
    _after_repair(directory, recs, {17, 18})


def test_a_record_after_a_damaged_chain_value_cannot_be_checked_and_is_not_kept(
    tmp_path: Path,
) -> None:
    """When the damage took the chain value of the record before, nothing can confirm
    the next record's content: it becomes a tombstone too, saying why."""
    directory = tmp_path / "log"
    recs = _build(directory)
    path, off = _offset_of_any(directory, 17)
    _flip(path, off + CHAIN_AT + 3)
    report = repair_log(directory)
    assert report.lost == [(17, 18)] and report.tampered == [(18, 18)]
    got = _after_repair(directory, recs, {17, 18})
    assert isinstance(got[17].event, RecordLost) and got[17].event.reason == UNCHECKED


def _forget(directory: Path, recs: list[Record], seq: int) -> list[Record]:
    """Redact record ``seq`` and record that it was, as ``ocb forget`` does; returns
    every record of the log then."""
    with SegmentLog(directory, clock=TickClock()) as log:
        gone = Record(seq=seq, ts=recs[seq - 1].ts, actor="t", event=RecordLost(reason="x"))
        log.redact({seq: encode_record(gone)})
        log.append([ContentForgotten(what="a record", seqs=(seq,))], actor="t")
        return list(log.read())


def test_redacted_records_and_earlier_tombstones_stay_valid(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    recs = _build(directory, segment_bytes=700)
    _forget(directory, recs, 5)
    path, off = _offset_of_any(directory, 9)
    _flip(path, off + 60)
    assert repair_log(directory).lost == [(9, 9)]
    frames = _frames(directory)
    assert frames[5].flags & REDACTED and frames[9].flags & LOST
    key = _key_of(recs, 20)
    replace_text(directory, 20, key, key[:-1] + b"X", rechain=False)
    report = repair_log(directory)
    assert (report.lost, report.tampered) == ([(20, 20)], [(20, 20)])
    kept = _frames(directory)
    assert all(kept[s].payload == frames[s].payload for s in kept if s != 20)
    assert kept[5].flags & REDACTED and kept[9].flags & LOST
    verify_log(directory)
    assert not repair_log(directory).changed


@settings(max_examples=40, deadline=None)
@given(
    seq=st.integers(1, sum(len(b) for b in BATCHES)),
    field=st.sampled_from(FIELDS),
    at=st.integers(0, 10**6),
)
def test_a_record_tampered_in_any_field_never_survives_and_nothing_else_changes(
    tmp_path_factory: pytest.TempPathFactory, seq: int, field: str, at: int
) -> None:
    """One field of one record changed, its checksum fixed: after the repair that record
    is a tombstone (or, when only its chain value changed, itself), every other record
    is kept byte for byte, and the log verifies."""
    directory = tmp_path_factory.mktemp("log") / "log"
    recs = _build(directory, segment_bytes=700)
    frames = _frames(directory)
    tamper(directory, seq, field, at)
    report = repair_log(directory)
    assert report.lost in ([], [(seq, seq)])
    with SegmentLog(directory, writer=False) as log:
        got = list(log.read())
    assert [r.seq for r in got] == [r.seq for r in recs]
    kept = _frames(directory)
    for r in got:
        if r.seq == seq and isinstance(r.event, RecordLost):
            continue
        assert r == recs[r.seq - 1] and kept[r.seq].payload == frames[r.seq].payload
    assert field == "chain" or isinstance(got[seq - 1].event, RecordLost)
    verify_log(directory)
    assert not repair_log(directory).changed


def test_a_repair_that_fails_half_way_is_finished_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seals of the segments a repair rewrites go first: one stopped after some of
    them leaves no seal naming their old chain, and a second repair finishes."""
    directory = tmp_path / "log"
    recs = _build(directory, segment_bytes=700)
    assert len(seg_files(directory)) > 3
    path, off = _offset_of_any(directory, 3)
    _flip(path, off + 60)
    done: list[Path] = []

    def one_then_fail(path: Path, data: bytes, suffix: str = ".rewrite") -> None:
        if done:
            raise OSError(28, "No space left on device")
        replace_segment(path, data, suffix)
        done.append(path)

    with monkeypatch.context() as m:
        m.setattr("ocb_events.repair.replace_segment", one_then_fail)
        with pytest.raises(LogWriteFailed):
            repair_log(directory)
    assert len(done) == 1
    repair_log(directory)
    _after_repair(directory, recs, {3})


def test_a_record_passed_off_as_redacted_is_refused_and_becomes_a_tombstone(
    tmp_path: Path,
) -> None:
    """A redacted frame keeps the digest of what it replaced, so the chain does not cover
    its content: a record rewritten as a "redaction" keeping its digest still links.
    Only one that a later content_forgotten names is valid."""
    directory = tmp_path / "log"
    recs = _forget(directory, _build(directory), 5)
    forged = Record(seq=17, ts=recs[16].ts, actor="t", event=ConfigChanged(key="evil", value=1))

    def disguise(frame: bytearray) -> None:
        payload = bytes(frame[PAYLOAD_AT:])
        frame[PAYLOAD_AT:] = digest(payload) + encode_record(forged)
        word = struct.unpack_from("<I", frame, 4)[0]
        struct.pack_into("<I", frame, 4, (word & ~LENGTH_MASK | REDACTED) + len(frame) - 40)

    edit_frame(directory, 17, disguise)
    with pytest.raises(LogCorrupt, match="no later content_forgotten record names it") as info:
        verify_log(directory)
    assert info.value.seq == 17
    report = repair_log(directory)
    assert (report.lost, report.tampered) == ([(17, 17)], [(17, 17)])
    got = _after_repair(directory, recs, {17})
    assert isinstance(got[16].event, RecordLost) and got[16].event.reason == UNNAMED_REDACTION
    assert _frames(directory)[5].flags & REDACTED, "the redaction content_forgotten names stays"


def test_a_sealed_segment_rewritten_with_a_consistent_chain_repairs_to_a_log_that_opens(
    tmp_path: Path,
) -> None:
    """Nothing inside the log tells whether the rewritten segment or the next one is the
    history: the repair keeps both, names the record where they meet as unconfirmed,
    renews the seal that named the old chain, and the log opens again."""
    directory = tmp_path / "log"
    recs = _build(directory, segment_bytes=700)
    second = int(seg_files(directory)[1].name[:-4])
    forged = [
        Record(seq=r.seq, ts=r.ts, actor="evil", event=RecordLost(reason="x"))
        for r in recs[: second - 1]
    ]
    frames, _ = frame_records(forged, ZERO_CHAIN)
    seg_files(directory)[0].write_bytes(segment_header(1, ZERO_CHAIN) + b"".join(frames))
    with pytest.raises(LogCorrupt, match="replaced since it was sealed"):
        SegmentLog(directory, writer=False)
    report = repair_log(directory)
    assert (report.lost, report.unconfirmed, report.renewed) == ([], [second - 1], ["SEALS"])
    with SegmentLog(directory, writer=False) as log:
        got = list(log.read())
    assert got == forged + recs[second - 1 :]
    verify_log(directory)
