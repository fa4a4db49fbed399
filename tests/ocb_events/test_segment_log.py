"""The segment log on disk: torn tails, corruption, locking, TAIL checkpoints,
rollover and durability."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import ocb_events.log as log_module
from ocb_events.clock import TickClock
from ocb_events.errors import BrainLocked, LogCorrupt, LogTruncated, LogWriteFailed
from ocb_events.frames import ZERO_CHAIN
from ocb_events.log import (
    SEGMENT_BYTES,
    Recovery,
    SegmentLog,
    frame_records,
    verify_log,
)
from ocb_events.schema import ConfigChanged, Event, NodeInjected, Record
from tests.ocb_events.support import config_events, seg_files, snapshot

HEADER = 32  # MAGIC + first seq + the chain before it
FRAME_HEADER = 40  # crc, length word, seq, ts, chain
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Built:
    """A log written by ``_build``: its records, and per batch the segment and the
    byte range the batch occupies, and the TAIL checkpoint written after it."""

    directory: Path
    records: list[Record]
    batches: list[tuple[str, int, int]]
    tails: list[bytes]

    def records_upto(self, batch: int) -> list[Record]:
        """The records of batches ``0 .. batch - 1``."""
        return [r for r in self.records if int(r.actor[1:]) < batch]

    def first_seq_of(self, batch: int) -> int:
        return len(self.records_upto(batch)) + 1


def _build(
    directory: Path,
    batches: list[list[Event]],
    *,
    segment_bytes: int = SEGMENT_BYTES,
    last_in_new_segment: bool = False,
) -> Built:
    """Append ``batches`` (actor ``b<i>``) recording where each one landed (full
    segments stay plain: the tests here damage frames)."""
    out = Built(directory, [], [], [])
    log = SegmentLog(directory, clock=TickClock(), segment_bytes=segment_bytes, compress=False)
    try:
        for i, batch in enumerate(batches):
            if last_in_new_segment and i == len(batches) - 1:
                log.close()
                log = SegmentLog(directory, clock=TickClock(), segment_bytes=1, compress=False)
            before = {p.name: p.stat().st_size for p in seg_files(directory)}
            out.records.extend(log.append(batch, actor=f"b{i}"))
            seg = seg_files(directory)[-1]
            out.batches.append((seg.name, before.get(seg.name, HEADER), seg.stat().st_size))
            out.tails.append((directory / "TAIL").read_bytes())
    finally:
        log.close()
    return out


def _restore(directory: Path, files: dict[str, bytes], tail: bytes | None) -> None:
    """Put the segment files (and TAIL) back exactly as given."""
    for p in seg_files(directory):
        if p.name not in files:
            p.unlink()
    for name, data in files.items():
        (directory / name).write_bytes(data)
    if tail is None:
        (directory / "TAIL").unlink(missing_ok=True)
    else:
        (directory / "TAIL").write_bytes(tail)


def _frame_offsets(built: Built) -> dict[int, tuple[str, int, int]]:
    """seq -> (segment, frame offset, frame length), from the records themselves."""
    out: dict[int, tuple[str, int, int]] = {}
    by_segment: dict[str, int] = {}
    firsts = sorted(int(p.name[:-4]) for p in seg_files(built.directory))
    for rec in built.records:
        first = max(f for f in firsts if f <= rec.seq)
        name = f"{first:020d}.seg"
        off = by_segment.get(name, HEADER)
        length = len(frame_records([rec], ZERO_CHAIN)[0][0])
        out[rec.seq] = (name, off, length)
        by_segment[name] = off + length
    return out


LAST_BATCH: list[Event] = [
    ConfigChanged(key="a", value=1.5),
    NodeInjected(node_id="n", node_type="CORRECTION", content="never do that"),
    ConfigChanged(key="b", value="x" * 40),
]
BATCHES: list[list[Event]] = [config_events(1, "first"), config_events(2, "second"), LAST_BATCH]


# ------------------------------------------------------------------ torn tails


def _tail_for(built: Built, variant: str) -> bytes | None:
    return {"current": built.tails[-1], "stale": built.tails[-2], "missing": None}[variant]


@pytest.mark.parametrize("layout", ["same_segment", "new_segment"])
@pytest.mark.parametrize("tail", ["stale", "missing"])
def test_torn_last_batch_disappears_at_every_offset(tmp_path: Path, layout: str, tail: str) -> None:
    """A writer killed while it wrote its last batch: the TAIL still names the end
    before that batch (or is gone), so the partial batch was never acknowledged."""
    directory = tmp_path / "log"
    built = _build(directory, BATCHES, last_in_new_segment=layout == "new_segment")
    name, start, end = built.batches[-1]
    pristine = snapshot(directory)
    kept = built.records_upto(len(BATCHES) - 1)
    assert (name == "00000000000000000001.seg") == (layout == "same_segment")
    low = start if layout == "same_segment" else 0
    for k in range(low, end):
        _restore(directory, {**pristine, name: pristine[name][:k]}, _tail_for(built, tail))
        with SegmentLog(directory, clock=TickClock(start_ns=0)) as log:
            if k < HEADER:
                assert log.recovery is None
                assert not (directory / name).exists(), "a headerless segment is removed"
            elif k == start:
                assert log.recovery is None
            else:
                assert log.recovery == Recovery(name, start, k - start, len(kept), True)
                assert (directory / name).stat().st_size == start
            assert (log.last_seq, log.last_ts) == (kept[-1].seq, kept[-1].ts)
            assert list(log.read()) == kept
            new = log.append(config_events(1, "after"), actor="after")
            assert new[0].seq == len(kept) + 1
            assert new[0].ts == kept[-1].ts, "ts never goes back, even after recovery"
        with SegmentLog(directory) as again:
            assert again.recovery is None
            assert list(again.read()) == kept + new
        assert verify_log(directory)[-1].last_seq == len(kept) + 1


@pytest.mark.parametrize("layout", ["same_segment", "new_segment"])
def test_a_truncated_acknowledged_batch_is_lost_records_not_a_torn_tail(
    tmp_path: Path, layout: str
) -> None:
    """The TAIL names the last batch as committed: a segment cut short of it (or
    deleted) lost acknowledged records, and nothing may open the log and start a new
    history over them."""
    directory = tmp_path / "log"
    built = _build(directory, BATCHES, last_in_new_segment=layout == "new_segment")
    name, start, end = built.batches[-1]
    pristine = snapshot(directory)
    held = built.records[-1].seq
    cuts = [start, start + 1, end - 1]
    if layout == "new_segment":
        cuts += [0, HEADER - 1]
    for k in [*cuts, None]:
        files = dict(pristine)
        if k is None:
            del files[name]  # the last segment deleted
        else:
            files[name] = pristine[name][:k]
        _restore(directory, files, built.tails[-1])
        for writer in (False, True):
            with pytest.raises(LogTruncated) as info:
                SegmentLog(directory, writer=writer)
            present = 0 if k is None and layout == "same_segment" else held - len(LAST_BATCH)
            assert (info.value.held, info.value.present) == (held, present)
            assert "verify --repair" in info.value.hint
        with pytest.raises(LogTruncated):
            verify_log(directory)
        assert snapshot(directory) == {n: b for n, b in files.items()}, "nothing is changed"
        assert (directory / "TAIL").read_bytes() == built.tails[-1]


def test_reader_never_truncates_a_torn_tail(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    built = _build(directory, BATCHES)
    name, start, end = built.batches[-1]
    torn = snapshot(directory)[name][: end - 5]
    (directory / name).write_bytes(torn)
    (directory / "TAIL").write_bytes(built.tails[-2])  # killed before its commit
    files = sorted(p.name for p in directory.iterdir())
    with SegmentLog(directory, writer=False) as reader:
        assert reader.recovery == Recovery(name, start, end - 5 - start, 3, repaired=False)
        assert list(reader.read()) == built.records[:3]
        assert reader.last_seq == 3
        with pytest.raises(LogWriteFailed):
            reader.append(config_events(1), actor="t")
    assert (directory / name).read_bytes() == torn
    assert sorted(p.name for p in directory.iterdir()) == files
    assert verify_log(directory)[-1].last_seq == 3, "verify tolerates a torn tail"
    assert (directory / name).read_bytes() == torn


def test_garbage_after_the_last_batch_is_a_torn_tail(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    built = _build(directory, BATCHES)
    name, _, end = built.batches[-1]
    with open(directory / name, "ab") as fh:
        fh.write(os.urandom(3) + b"\x00" * 40 + b"\xff" * 9)
    with SegmentLog(directory) as log:
        assert log.recovery == Recovery(name, end, 52, len(built.records))
        assert list(log.read()) == built.records
    assert (directory / name).stat().st_size == end


def test_an_empty_last_segment_is_removed(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    built = _build(directory, BATCHES)
    stray = directory / f"{len(built.records) + 1:020d}.seg"
    stray.write_bytes(b"")
    with SegmentLog(directory, writer=False) as reader:
        assert list(reader.read()) == built.records
    assert stray.exists(), "a reader changes nothing"
    with SegmentLog(directory) as log:
        assert list(log.read()) == built.records
        assert log.append(config_events(1), actor="t")[0].seq == len(built.records) + 1
    with SegmentLog(directory, writer=False) as reader:
        assert reader.last_seq == len(built.records) + 1


# ------------------------------------------------------------------ corruption


def _expect_corrupt(directory: Path, segment: str, offset: int, seq: int, writer: bool) -> None:
    """Opening or reading raises LogCorrupt naming exactly this record."""
    with pytest.raises(LogCorrupt) as info:
        with SegmentLog(directory, writer=writer) as log:
            list(log.read())
    err = info.value
    assert (err.segment, err.offset, err.seq) == (segment, offset, seq), err.message
    assert err.hint


CORRUPTION_BATCHES: list[list[Event]] = [
    config_events(1, "a"),
    config_events(1, "b"),
    config_events(3, "c"),  # seqs 3, 4, 5
    config_events(2, "d"),
    config_events(1, "e"),
]


@pytest.mark.parametrize("tail", ["present", "missing"])
@pytest.mark.parametrize(
    ("victim", "segment_bytes"),
    [(2, SEGMENT_BYTES), (4, SEGMENT_BYTES), (6, SEGMENT_BYTES), (2, 150), (4, 150)],
    ids=["single", "mid-batch", "before-last", "single-old-segment", "mid-batch-old-segment"],
)
def test_a_flipped_byte_in_an_earlier_record_is_corruption(
    tmp_path: Path, victim: int, segment_bytes: int, tail: str
) -> None:
    directory = tmp_path / "log"
    built = _build(directory, CORRUPTION_BATCHES, segment_bytes=segment_bytes)
    assert built.records[-1].seq > victim, "valid records follow the damage"
    if segment_bytes < SEGMENT_BYTES:
        assert len(seg_files(directory)) > 1
    name, offset, length = _frame_offsets(built)[victim]
    pristine = snapshot(directory)
    for i in range(offset, offset + length):
        damaged = bytearray(pristine[name])
        damaged[i] ^= 0xFF
        _restore(directory, {**pristine, name: bytes(damaged)}, _tail_for_corruption(built, tail))
        files = snapshot(directory)
        for writer in (False, True):
            _expect_corrupt(directory, name, offset, victim, writer)
        with pytest.raises(LogCorrupt) as info:
            verify_log(directory)
        assert (info.value.segment, info.value.offset, info.value.seq) == (name, offset, victim)
        assert snapshot(directory) == files, "the damaged log is left untouched"
        if tail == "present":
            assert _read_tail(directory) == built.tails[-1]


def _tail_for_corruption(built: Built, variant: str) -> bytes | None:
    return built.tails[-1] if variant == "present" else None


def _read_tail(directory: Path) -> bytes | None:
    path = directory / "TAIL"
    return path.read_bytes() if path.exists() else None


def test_a_bad_segment_header_is_corruption(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    _build(directory, BATCHES)
    seg = seg_files(directory)[0]
    data = bytearray(seg.read_bytes())
    data[0] ^= 0xFF
    seg.write_bytes(bytes(data))
    with pytest.raises(LogCorrupt) as info:
        SegmentLog(directory)
    assert (info.value.segment, info.value.offset) == (seg.name, 0)
    assert seg.read_bytes() == bytes(data)


def test_a_missing_middle_segment_is_corruption(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    _build(directory, [config_events(2, f"b{i}-") for i in range(12)], segment_bytes=400)
    segs = seg_files(directory)
    assert len(segs) >= 3
    missing_first = int(segs[1].name[:-4])
    segs[1].unlink()
    with pytest.raises(LogCorrupt) as info:
        verify_log(directory)
    assert info.value.seq == missing_first
    for writer in (False, True):
        with pytest.raises(LogCorrupt) as info:
            SegmentLog(directory, writer=writer)
        assert info.value.seq == missing_first


def test_a_truncated_older_segment_is_corruption(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    built = _build(directory, [config_events(2, f"b{i}-") for i in range(12)], segment_bytes=400)
    first = seg_files(directory)[0]
    in_first = [i for i, (name, _, _) in enumerate(built.batches) if name == first.name]
    assert len(in_first) > 1
    _, start, _ = built.batches[in_first[-1]]
    lost = built.first_seq_of(in_first[-1])
    with open(first, "r+b") as fh:  # lose the last batch of the first segment
        fh.truncate(start)
    with pytest.raises(LogCorrupt) as info:
        verify_log(directory)
    assert info.value.seq == lost
    for writer in (False, True):
        with pytest.raises(LogCorrupt) as info:
            SegmentLog(directory, writer=writer)
        assert info.value.seq == lost


# ------------------------------------------------------------------ locking

HOLDER = """
import sys
from pathlib import Path
from ocb_events.log import SegmentLog
log = SegmentLog(Path(sys.argv[1]))
print("ready", flush=True)
sys.stdin.readline()
"""


def _env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": str(REPO) + (os.pathsep + path if path else "")}


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """Another process holding the writer lock of ``tmp_path/log``."""
    directory = tmp_path / "log"
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(directory)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if line != "ready\n":
                proc.kill()
                _, err = proc.communicate(timeout=10)
                pytest.fail(f"the lock holder did not start: {line!r} {err}")
            yield proc, directory
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=10)


def test_a_second_writer_is_refused_with_the_holders_pid(
    holder: tuple[subprocess.Popen[str], Path],
) -> None:
    proc, directory = holder
    with pytest.raises(BrainLocked) as info:
        SegmentLog(directory)
    assert info.value.pid == proc.pid
    assert str(proc.pid) in str(info.value)
    assert info.value.hint
    with SegmentLog(directory, writer=False) as reader:  # readers take no lock
        assert reader.last_seq == 0
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    with SegmentLog(directory) as log:  # a dead holder leaves no stale lock
        assert log.append(config_events(1), actor="t")[0].seq == 1
    assert (directory / "LOCK").read_text().strip() == str(os.getpid())


def test_a_second_writer_in_the_same_process_is_refused(tmp_path: Path) -> None:
    with SegmentLog(tmp_path / "log") as log:
        log.append(config_events(1), actor="t")
        with pytest.raises(BrainLocked) as info:
            SegmentLog(tmp_path / "log")
        assert info.value.pid == os.getpid()
        assert log.append(config_events(1), actor="t")[0].seq == 2
    with SegmentLog(tmp_path / "log") as again:
        assert again.last_seq == 2


def test_a_refused_writer_changes_nothing(holder: tuple[subprocess.Popen[str], Path]) -> None:
    proc, directory = holder
    before = sorted(p.name for p in directory.iterdir())
    with pytest.raises(BrainLocked):
        SegmentLog(directory)
    assert sorted(p.name for p in directory.iterdir()) == before
    assert (directory / "LOCK").read_text().strip() == str(proc.pid)


# ------------------------------------------------------------------ TAIL checkpoint


@pytest.mark.parametrize(
    "damage",
    ["garbage", "short", "long", "empty", "flipped", "stale", "other-segment", "missing"],
)
def test_a_bad_tail_checkpoint_is_ignored(tmp_path: Path, damage: str) -> None:
    directory = tmp_path / "log"
    built = _build(directory, [config_events(2, f"b{i}-") for i in range(9)], segment_bytes=400)
    assert len(seg_files(directory)) > 1
    tail = directory / "TAIL"
    good = tail.read_bytes()
    if damage == "garbage":
        tail.write_bytes(bytes(range(len(good))))
    elif damage == "short":
        tail.write_bytes(good[:-1])
    elif damage == "long":
        tail.write_bytes(good + b"\x00")
    elif damage == "empty":
        tail.write_bytes(b"")
    elif damage == "flipped":
        tail.write_bytes(good[:10] + bytes([good[10] ^ 0x01]) + good[11:])
    elif damage == "stale":
        same_segment = [t for t in built.tails if t[:8] == good[:8] and t != good]
        tail.write_bytes(same_segment[0])
    elif damage == "other-segment":
        tail.write_bytes(built.tails[0])
    else:
        tail.unlink()
    last = built.records[-1]
    with SegmentLog(directory, writer=False) as reader:
        assert (reader.last_seq, reader.last_ts) == (last.seq, last.ts)
        assert list(reader.read()) == built.records
    with SegmentLog(directory, clock=TickClock(start_ns=0)) as log:
        assert log.recovery is None
        assert (log.last_seq, log.last_ts) == (last.seq, last.ts)
        assert list(log.read()) == built.records
        new = log.append(config_events(1), actor="t")
        assert (new[0].seq, new[0].ts) == (last.seq + 1, last.ts)
    assert tail.read_bytes() != good, "the writer rewrites the checkpoint"


# ------------------------------------------------------------------ rollover, durability


def test_rollover_starts_segments_named_by_their_first_seq(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    recs: list[Record] = []
    batch_starts = set()
    with SegmentLog(directory, clock=TickClock(), segment_bytes=512) as log:
        for i in range(60):
            batch_starts.add(log.last_seq + 1)
            recs.extend(log.append(config_events(i % 3 + 1, f"b{i}-"), actor="t"))
    segs = seg_files(directory)
    assert len(segs) > 5
    firsts = [int(p.name[:-4]) for p in segs]
    reports = verify_log(directory)
    assert [r.segment for r in reports] == [p.name for p in segs]
    assert [r.first_seq for r in reports] == firsts
    assert firsts[0] == 1
    assert all(a.last_seq + 1 == b.first_seq for a, b in zip(reports, reports[1:], strict=False))
    assert reports[-1].last_seq == len(recs)
    assert set(firsts) <= batch_starts
    with SegmentLog(directory, writer=False) as reader:
        assert list(reader.read()) == recs
        for lo in firsts[1:]:
            assert list(reader.read(lo - 2, lo + 2)) == recs[lo - 3 : lo + 2]


def test_a_batch_never_spans_two_segments(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    with SegmentLog(directory, clock=TickClock(), segment_bytes=100) as log:
        first = log.append(config_events(5, "big"), actor="t")
        second = log.append(config_events(4, "next"), actor="t")
    segs = seg_files(directory)
    assert [p.name for p in segs] == [f"{1:020d}.seg", f"{6:020d}.seg"]
    assert [r.records for r in verify_log(directory)] == [5, 4]
    with SegmentLog(directory, writer=False) as reader:
        assert list(reader.read()) == first + second


def test_durability_none_still_reads_back(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    with SegmentLog(directory, clock=TickClock(), durability="none", segment_bytes=256) as log:
        recs = []
        for i in range(20):
            recs.extend(log.append(config_events(2, f"b{i}-"), actor="t"))
        with log.group():
            recs.extend(log.append(config_events(1, "g"), actor="t"))
        assert list(log.read()) == recs
        with SegmentLog(directory, writer=False) as reader:
            assert list(reader.read()) == recs
    with SegmentLog(directory, durability="none") as again:
        assert again.recovery is None
        assert list(again.read()) == recs


def test_a_reader_of_a_missing_directory_is_empty(tmp_path: Path) -> None:
    with SegmentLog(tmp_path / "nowhere", writer=False) as reader:
        assert (reader.last_seq, list(reader.read())) == (0, [])
    assert not (tmp_path / "nowhere").exists()


def test_close_is_idempotent(tmp_path: Path) -> None:
    log = SegmentLog(tmp_path / "log")
    log.append(config_events(1), actor="t")
    log.close()
    log.close()
    with SegmentLog(tmp_path / "log") as again:
        assert again.last_seq == 1


# ------------------------------------------------------------------ failed writes


class _FullDisk:
    """Stands in for ``os`` inside the log module: the next write lands a few bytes,
    then the disk is full."""

    def __init__(self) -> None:
        self.calls = 0

    def write(self, fd: int, data: bytes | memoryview) -> int:
        self.calls += 1
        if self.calls == 1:
            return os.write(fd, bytes(data[:7]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)


def test_a_failed_write_rolls_the_segment_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "log"
    with SegmentLog(directory, clock=TickClock()) as log:
        recs = log.append(config_events(2), actor="t")
        files = snapshot(directory)
        monkeypatch.setattr(log_module, "os", _FullDisk())
        with pytest.raises(LogWriteFailed) as info:
            log.append(config_events(3, "lost"), actor="t")
        monkeypatch.undo()
        assert info.value.path == seg_files(directory)[0]
        assert "nothing was recorded" in info.value.hint
        assert snapshot(directory) == files
        assert (log.last_seq, list(log.read())) == (2, recs)
        more = log.append(config_events(1, "after"), actor="t")
        assert more[0].seq == 3
    with SegmentLog(directory) as again:
        assert again.recovery is None
        assert list(again.read()) == recs + more
