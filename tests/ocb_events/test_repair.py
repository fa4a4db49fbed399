"""Repairing a damaged log: intact records are kept, damaged or lost ones become
tombstones that keep their seq, and the hash chain is recomputed from the first change."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from ocb_events.clock import TickClock
from ocb_events.errors import LogCorrupt, LogTruncated
from ocb_events.log import SegmentLog, verify_log
from ocb_events.repair import repair_log
from ocb_events.schema import Record, RecordLost
from tests.ocb_events.support import config_events, seg_files, snapshot

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
