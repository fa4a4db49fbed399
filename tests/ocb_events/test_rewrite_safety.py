"""What a rewrite or a failed write leaves behind: a redaction or repair killed before its
TAIL is written, a TAIL that could not be written, a sealed segment whose records were
replaced, a failed fsync."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ocb_events.clock import TickClock
from ocb_events.codec import encode_record
from ocb_events.errors import LogCorrupt, LogWriteFailed
from ocb_events.frames import ZERO_CHAIN, segment_header
from ocb_events.log import SegmentLog, frame_records, verify_log
from ocb_events.marks import TailWriter
from ocb_events.repair import repair_log
from ocb_events.schema import ContentForgotten, Record, RecordLost
from tests.ocb_events.support import config_events, seg_files


def _log(directory: Path, n: int, segment_bytes: int = 1 << 20) -> list[Record]:
    with SegmentLog(directory, clock=TickClock(), segment_bytes=segment_bytes) as log:
        return [r for i in range(n) for r in log.append(config_events(1, f"r{i}-"), actor="t")]


def _redaction(log: SegmentLog, seq: int) -> dict[int, bytes]:
    rec = Record(seq=seq, ts=log.ts_of(seq), actor="t", event=RecordLost(reason="forgotten"))
    return {seq: encode_record(rec)}


def _forget(log: SegmentLog, seq: int) -> None:
    """Redact record ``seq`` and record that it was, as ``ocb forget`` does."""
    log.redact(_redaction(log, seq))
    log.append([ContentForgotten(what="a record", seqs=(seq,))], actor="t")


def test_a_redaction_killed_before_its_tail_was_written_opens(tmp_path: Path) -> None:
    """The TAIL goes before the segment is renamed: a kill between the two leaves a log
    without one, which opens by scanning."""
    recs = _log(tmp_path, 5)
    with SegmentLog(tmp_path) as log:
        log.redact(_redaction(log, 3))
    (tmp_path / "TAIL").unlink()  # what a kill right after the rename leaves
    with SegmentLog(tmp_path) as log:
        got = list(log.read())
    assert [r.seq for r in got] == [1, 2, 3, 4, 5]
    assert got[3:] == recs[3:] and isinstance(got[2].event, RecordLost)


def test_a_repair_replaces_a_tail_that_describes_other_bytes(tmp_path: Path) -> None:
    """A stale TAIL whose crc no longer matches an intact segment (what an older rewrite
    killed before its TAIL write left) stops every open; a repair writes it anew and
    keeps every record."""
    recs = _log(tmp_path, 5)
    old_tail = (tmp_path / "TAIL").read_bytes()
    with SegmentLog(tmp_path) as log:
        _forget(log, 3)
    (tmp_path / "TAIL").write_bytes(old_tail)
    with pytest.raises(LogCorrupt):
        SegmentLog(tmp_path, writer=False)
    report = repair_log(tmp_path)
    assert report.lost == [] and report.segments == [] and report.renewed == ["TAIL"]
    with SegmentLog(tmp_path) as log:
        got = list(log.read())
    assert [r.seq for r in got] == [1, 2, 3, 4, 5, 6] and got[4] == recs[4]
    verify_log(tmp_path)


def test_a_redaction_after_failed_tail_writes_keeps_the_writers_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TAIL a redaction writes comes from what the writer holds, not from a TAIL
    left stale by writes the disk refused: no seq is handed out twice."""
    _log(tmp_path, 3)
    with SegmentLog(tmp_path, clock=TickClock()) as log:

        def refuse(self: TailWriter, tail: object) -> None:
            raise OSError(5, "Input/output error")

        with monkeypatch.context() as m:
            m.setattr(TailWriter, "write", refuse)
            log.append(config_events(2, "late-"), actor="t")
        assert log.last_seq == 5
        log.redact(_redaction(log, 1))
        assert log.last_seq == 5
        assert [r.seq for r in log.append(config_events(1, "next-"), actor="t")] == [6]
        log.append([ContentForgotten(what="a record", seqs=(1,))], actor="t")
    with SegmentLog(tmp_path, writer=False) as log:
        assert [r.seq for r in log.read()] == [1, 2, 3, 4, 5, 6, 7]
    verify_log(tmp_path)


def test_a_sealed_segment_whose_records_were_replaced_is_refused(tmp_path: Path) -> None:
    """Rewriting a full segment with other records, its chain and checksums recomputed,
    does not pass as the sealed segment: the seal's last seq and chain must hold."""
    recs = _log(tmp_path, 12, segment_bytes=300)
    segs = seg_files(tmp_path)
    assert len(segs) > 2
    second = int(segs[1].name.removesuffix(".seg"))
    forged = [
        Record(seq=r.seq, ts=r.ts, actor="evil", event=RecordLost(reason="x"))
        for r in recs
        if r.seq < second
    ]
    frames, chain = [], ZERO_CHAIN
    for r in forged:
        got, chain = frame_records([r], chain)
        frames += got
    segs[0].write_bytes(segment_header(1, ZERO_CHAIN) + b"".join(frames))
    for writer in (False, True):
        with pytest.raises(LogCorrupt, match="replaced since it was sealed"):
            SegmentLog(tmp_path, writer=writer)


def test_a_failed_fsync_rolls_the_batch_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch whose fsync fails was never acknowledged: it leaves neither the file nor
    the writer's memory, and the next batch takes its seqs."""
    recs = _log(tmp_path, 2)
    real = os.fsync
    with SegmentLog(tmp_path, clock=TickClock()) as log:
        with monkeypatch.context() as m:
            m.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(5, "EIO")))
            with pytest.raises(LogWriteFailed, match="fsync failed"):
                log.append(config_events(3, "lost-"), actor="t")
        assert os.fsync is real and log.last_seq == 2
        again = log.append(config_events(1, "kept-"), actor="t")
        assert [r.seq for r in again] == [3]
        assert [r.seq for r in log.read()] == [1, 2, 3]
    with SegmentLog(tmp_path, writer=False) as log:
        got = list(log.read())
    assert got[:2] == recs and got[2] == again[0]
    verify_log(tmp_path)
