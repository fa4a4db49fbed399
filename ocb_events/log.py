"""The segment log: append-only files of framed, hash-chained records (the only log I/O).

NOTE: the frame layout is the storage format (``ocb_events.frames``); change it only
with a new magic.

Layout of a log directory::

    00000000000000000001.seg   segments, named by the seq of their first record
    TAIL                       what the log held at its last commit (``ocb_events.marks``)
    SEALS                      the full segments, as last verified
    LOCK                       the writer lock (fcntl), holding the writer's pid

Opening checks that the log still holds what it is known to have held, before any
command may read or append:

* every full segment whose (size, mtime, inode) differs from its seal is verified
  end to end (frames, checksums, seqs, hash chain) and sealed again;
* the bytes of the last segment before the TAIL's end offset must give the TAIL's crc,
  so damage anywhere in acknowledged records is found (``LogCorrupt`` naming the
  first damaged seq and its offset);
* records the TAIL or the seals name must still be there (``LogTruncated``);
* after the TAIL's end, a frame cut short by the end of the file, or a batch whose
  last frame is missing, is a torn tail: a writer truncates it back to the end of the
  last complete batch (reported in ``recovery``); a reader leaves it and ignores it.
  A complete frame whose checksum fails is corruption, never a torn write.

A writer opening a log written in the old ``OCBSEG02`` format rewrites it in the
current one first (``ocb_events.rewrite``): the records keep their bytes and gain
their chain.
"""

from __future__ import annotations

import mmap
import os
import threading
import zlib
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, overload

from ocb_events.clock import Clock, system_clock
from ocb_events.codec import decode_for_fold, decode_record
from ocb_events.durable import fsync_dir, open_private, private_dir
from ocb_events.errors import LogConflict, LogCorrupt, LogError, LogWriteFailed
from ocb_events.frames import (
    CURRENT,
    HEAD,
    ZERO_CHAIN,
    Format,
    frame_records,
    map_file,
    read_header,
    scan,
    scan_offsets,
    segment_header,
)
from ocb_events.integrity import (
    SegmentReport,
    check_claims,
    check_sealed,
    check_tail,
    drop_unwritten,
    verify_log,
)
from ocb_events.marks import Seal, Tail, TailWriter, read_seals, read_tail, write_seals
from ocb_events.rewrite import (
    migrate_legacy,
    needs_migration,
    redact_records,
    sweep_temp,
)
from ocb_events.schema import Event, FoldRecord, Record
from ocb_events.sealing import Sealer
from ocb_events.segments import (
    Recovery,
    Segment,
    acquire_lock,
    is_compressed,
    list_segments,
    packed_head,
    read_at,
    read_frames,
    segment_format,
    segment_name,
)

__all__ = [
    "SEGMENT_BYTES",
    "Durability",
    "Recovery",
    "SegmentLog",
    "SegmentReport",
    "frame_records",
    "verify_log",
]

SEGMENT_BYTES = 16 * 1024 * 1024
"""A new segment starts past this size; it also bounds the crc check of every open."""

Durability = Literal["batch", "none"]
_Decode = Callable[..., Record | FoldRecord]


class SegmentLog:
    """The event log on disk.

    Args:
        directory: the log directory (created for a writer).
        clock: the source of record timestamps; ts never decreases.
        durability: ``"batch"`` fsyncs every append (or group), ``"none"`` leaves
            flushing to the operating system.
        segment_bytes: the size after which a new segment is started.
        writer: take the exclusive writer lock and repair a torn tail; readers take
            no lock and stop quietly at an incomplete tail.
        compress: store each segment compressed once it is full
            (``ocb_events.blocks``).

    Raises:
        BrainLocked: another writer holds the lock.
        LogCorrupt: a damaged record (the seq and offset are named).
        LogTruncated: records the log is known to have held are gone.
    """

    def __init__(
        self,
        directory: Path,
        *,
        clock: Clock = system_clock,
        durability: Durability = "batch",
        segment_bytes: int = SEGMENT_BYTES,
        writer: bool = True,
        compress: bool = True,
    ) -> None:
        self.directory = Path(directory)
        self._clock = clock
        self.durability: Durability = durability
        self.segment_bytes = segment_bytes
        self.writer = writer
        self.compress = Sealer() if compress else None
        self.recovery: Recovery | None = None
        self._mutex = threading.RLock()
        self._group_depth = 0
        self._dirty = False
        self._broken = ""  # why appends are refused until the log is reopened
        self._durable: tuple[int, int, int, bytes, int] = (0, 0, 0, ZERO_CHAIN, 0)
        self._fd: int | None = None
        self._lock_fd: int | None = None
        self._index: dict[int, array[int]] = {}
        self._tail = TailWriter(self.directory)
        self._segments: list[Segment] = []
        self._seals: dict[int, Seal] = {}
        self._last_seq = self._last_ts = self._end = self._prefix_crc = 0
        self._chain = ZERO_CHAIN
        if writer:
            private_dir(self.directory)
            self._lock_fd = acquire_lock(self.directory)
        try:
            self._open()
        except OSError as exc:
            self.close()
            reason = exc.strerror or str(exc)
            if writer:
                raise LogWriteFailed(self.directory, reason) from exc
            raise LogError(
                f"could not read the log in {self.directory}: {reason}",
                "check that the brain directory is readable",
            ) from exc
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ opening

    def _open(self) -> None:
        self._segments, self._seals, self._index = [], {}, {}
        self._last_seq = self._last_ts = self._end = self._prefix_crc = 0
        self._chain = ZERO_CHAIN
        if not self.directory.exists():
            return
        # TAIL first: a rollover after this read adds a segment, never removes one
        tail = read_tail(self.directory)
        segs = list_segments(self.directory)
        if self.writer:
            sweep_temp(self.directory)
            if needs_migration(segs, read_seals(self.directory)):
                self.recovery = migrate_legacy(self.directory, segs)
                tail, segs = read_tail(self.directory), list_segments(self.directory)
        self._seals = read_seals(self.directory)
        self._segments = segs
        drop_unwritten(self._segments, tail, writer=self.writer)
        resealed = check_sealed(self._segments, self._seals)
        if self._segments:
            try:
                self._recover_last(tail)
            except LogCorrupt:
                fresh = read_tail(self.directory)
                if fresh == tail or self.writer:
                    raise
                tail = fresh  # a writer rewrote the segment (forget) while we read
                self._recover_last(tail)
        check_claims(tail, self._seals.values(), self._last_seq)
        if self.writer:
            if resealed:
                write_seals(self.directory, self._seals)
            self._write_tail()
            self._mark_durable()

    def _recover_last(self, tail: Tail | None) -> None:
        """Find the end of the last segment, checking what the TAIL says of it."""
        seg = self._segments[-1]
        prev = self._seals.get(self._segments[-2].first_seq) if len(self._segments) > 1 else None
        buf, size = map_file(seg.path)
        try:
            head = read_header(buf, size, seg.name, seg.first_seq)
            assert head is not None  # headerless last segments were dropped
            fmt, chain = head
            seg.fmt = fmt
            if fmt.chained and prev is not None and chain != prev.chain:
                raise LogCorrupt(seg.name, 0, seg.first_seq, "hash chain broken between segments")
            start, expected = fmt.header_size, seg.first_seq
            last_ts = prev.last_ts if prev is not None else self._prev_last_ts()
            prefix: int | None = None
            if tail is not None and tail.first_seq == seg.first_seq and fmt.chained:
                prefix = check_tail(buf, size, seg, fmt, tail, chain, last_ts)
                start, expected, last_ts = tail.offset, tail.last_seq + 1, tail.last_ts
                chain = tail.chain
            got = scan(
                buf, start, size, first_expected=expected, name=seg.name, last_ts=last_ts,
                chain=chain, fmt=fmt,
            )  # fmt: skip
            if self.writer:
                with memoryview(buf)[start : got.end] as rest:
                    base = prefix if prefix is not None else zlib.crc32(bytes(buf[:start]))
                    self._prefix_crc = zlib.crc32(rest, base)
        finally:
            if isinstance(buf, mmap.mmap):
                buf.close()
        if got.torn_at is not None:
            dropped = size - got.torn_at
            if self.writer:
                self._truncate(seg, got.torn_at)
                self.recovery = Recovery(seg.name, got.torn_at, dropped, got.last_seq)
            else:
                self.recovery = Recovery(seg.name, got.torn_at, dropped, got.last_seq, False)
        self._last_seq, self._last_ts = got.last_seq, got.last_ts
        self._end, self._chain = got.end, got.chain

    def _prev_last_ts(self) -> int:
        if len(self._segments) < 2:
            return 0
        seg = self._segments[-2]
        offsets = self._offsets(seg)
        if not offsets:
            return 0
        return int(HEAD.unpack(read_at(seg.path, offsets[-1], HEAD.size))[3])

    def _truncate(self, seg: Segment, offset: int) -> None:
        fd = os.open(seg.path, os.O_WRONLY)
        try:
            os.ftruncate(fd, offset)
            os.fsync(fd)
        finally:
            os.close(fd)

    # ------------------------------------------------------------------ reading

    @property
    def last_seq(self) -> int:
        return self._last_seq

    @property
    def last_ts(self) -> int:
        return self._last_ts

    @overload
    def read(
        self, from_seq: int = ..., to_seq: int | None = ..., *, light: Literal[False] = ...
    ) -> Iterator[Record]: ...

    @overload
    def read(
        self, from_seq: int = ..., to_seq: int | None = ..., *, light: Literal[True]
    ) -> Iterator[Record | FoldRecord]: ...

    def read(
        self, from_seq: int = 1, to_seq: int | None = None, *, light: bool = False
    ) -> Iterator[Record | FoldRecord]:
        """Records from ``from_seq`` to ``to_seq`` (default: the end known at the call).

        Args:
            light: decode query traces to their head (``QueryTracedHead``), which is
                all any fold needs; replay reads this way.

        Raises:
            LogCorrupt: a record in range fails its checksum.
        """
        end = self._last_seq if to_seq is None else to_seq
        return self.read_decoded(from_seq, end, decode_for_fold if light else decode_record)

    def read_decoded(self, from_seq: int, to_seq: int, decode: Callable[..., Any]) -> Iterator[Any]:
        """``decode`` of each record ``from_seq..to_seq`` (``protocol.EncodedLog``)."""
        limit, from_seq = min(to_seq, self._last_seq), max(from_seq, 1)
        return iter(()) if from_seq > limit else self._read(from_seq, limit, decode)

    def _read(self, from_seq: int, limit: int, decode: _Decode) -> Iterator[Record | FoldRecord]:
        for seg, fmt, off, expected in self._starts(from_seq, limit):
            yield from read_frames(seg, fmt, off, expected, from_seq, limit, decode, self._segments)

    def _starts(self, from_seq: int, limit: int) -> Iterator[tuple[Segment, Format, int, int]]:
        """The segments holding records ``from_seq..limit``, each with its format and
        where to start reading it (a frame's offset and seq: its first frame, or in a
        plain segment the frame of ``from_seq``)."""
        segs = self._segments
        idx = max((i for i, seg in enumerate(segs) if seg.first_seq <= from_seq), default=0)
        for seg in segs[idx:]:
            if seg.first_seq > limit:
                return
            fmt = segment_format(seg)
            off, expected = fmt.header_size, seg.first_seq
            if from_seq > seg.first_seq and not is_compressed(seg.path):
                offsets = self._offsets(seg)
                k = from_seq - seg.first_seq
                if k < len(offsets):
                    off, expected = offsets[k], from_seq
            yield seg, fmt, off, expected

    def _offsets(self, seg: Segment) -> array[int]:
        """Offset of every frame of a segment by ``seq - first_seq`` (built once)."""
        got = self._index.get(seg.first_seq)
        if got is None:
            got = scan_offsets(seg.path, seg.first_seq, segment_format(seg))
            self._index[seg.first_seq] = got
        return got

    def _frame_head(self, seq: int) -> tuple[Segment, bytes]:
        if not 1 <= seq <= self._last_seq:
            raise LogError(f"no record {seq} (the log holds 1..{self._last_seq})")
        seg = next(s for s in reversed(self._segments) if s.first_seq <= seq)
        fmt = segment_format(seg)
        head = packed_head(seg, seq, fmt)
        if head is None:
            off = self._offsets(seg)[seq - seg.first_seq]
            head = read_at(seg.path, off, fmt.frame_size)
        return seg, head

    def ts_of(self, seq: int) -> int:
        """The ts of record ``seq`` (read from its frame header, no decoding).

        Raises:
            LogError: ``seq`` is outside 1..last_seq.
        """
        _, head = self._frame_head(seq)
        return int(HEAD.unpack_from(head)[3])

    def chain_of(self, seq: int) -> bytes | None:
        """The hash chain of the history up to record ``seq`` (all zeros for 0); None
        for a record of the old format, which carries no chain.

        Raises:
            LogError: ``seq`` is outside 0..last_seq.
        """
        if seq == 0:
            return ZERO_CHAIN
        if seq == self._last_seq and self._chain:
            return self._chain
        seg, head = self._frame_head(seq)
        fmt = segment_format(seg)
        return bytes(fmt.frame.unpack(head)[4]) if fmt.chained else None

    # ------------------------------------------------------------------ writing

    def append(
        self, events: Sequence[Event], *, actor: str, expected_seq: int | None = None
    ) -> list[Record]:
        """Append ``events`` as one batch (one write, one fsync under ``"batch"``).

        Raises:
            LogConflict: ``expected_seq`` is stale.
            LogWriteFailed: the disk refused the write or its fsync; the segment is
                rolled back to its last committed record.
        """
        if not self.writer:
            raise LogWriteFailed(self.directory, "the log was opened read-only")
        with self._mutex:
            if self._broken:
                raise LogWriteFailed(self.directory, self._broken)
            if expected_seq is not None and expected_seq != self._last_seq:
                raise LogConflict(expected_seq, self._last_seq)
            if not events:
                return []
            ts = max(self._clock(), self._last_ts)
            first = self._last_seq + 1
            recs = [
                Record(seq=first + i, ts=ts, actor=actor, event=ev)  # type: ignore[arg-type]
                for i, ev in enumerate(events)
            ]
            frames, chain = frame_records(recs, self._chain)
            data = b"".join(frames)
            start = self._write(data, first)
            self._prefix_crc = zlib.crc32(data, self._prefix_crc)
            offsets = self._index.get(self._segments[-1].first_seq)
            if offsets is not None:
                for frame in frames:
                    offsets.append(start)
                    start += len(frame)
            self._last_seq, self._last_ts, self._chain = recs[-1].seq, ts, chain
            if self._group_depth == 0:
                self._commit()
            return recs

    def _write(self, data: bytes, first_seq: int) -> int:
        """Write one batch; return the offset it starts at."""
        self._ensure_segment(first_seq)
        assert self._fd is not None
        start = self._end
        try:
            view = memoryview(data)
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        except OSError as exc:
            self._cut(start)
            raise LogWriteFailed(self._segments[-1].path, exc.strerror or str(exc)) from exc
        self._end = start + len(data)
        self._dirty = True
        return start

    def _ensure_segment(self, first_seq: int) -> None:
        """Open the last segment for appending, or start a new one when it is full."""
        last = self._segments[-1] if self._segments else None
        if last is not None and self._fd is None and is_compressed(last.path):
            last = None  # a full segment (the one after it was lost): start anew
        if last is not None and self._end < self.segment_bytes:
            if self._fd is None:
                self._fd = os.open(self._segments[-1].path, os.O_WRONLY | os.O_APPEND)
            return
        if self._fd is not None:
            self._commit()
            os.close(self._fd)
            self._fd = None
        path = self.directory / segment_name(first_seq)
        header = segment_header(first_seq, self._chain)
        try:
            if self._segments:
                self._seal_last()
            fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND)
            try:
                if os.write(fd, header) != len(header):
                    raise OSError(28, "short write of a segment header")
                os.fsync(fd)
            except BaseException:
                os.close(fd)
                path.unlink(missing_ok=True)
                raise
            fsync_dir(self.directory)
        except OSError as exc:
            raise LogWriteFailed(path, exc.strerror or str(exc)) from exc
        self._segments.append(Segment(first_seq, path, CURRENT))
        self._fd = fd
        self._end = len(header)
        self._prefix_crc = zlib.crc32(header)
        self._write_tail()
        self._mark_durable()
        if self.compress is not None and len(self._segments) > 1:
            self.compress.compress(self.directory, self._segments[:-1], self._seals, self._offsets)

    def _seal_last(self) -> None:
        """Record the last segment as full (it is never written again), so the next
        open trusts it while its size, mtime and inode stay the same."""
        seg = self._segments[-1]
        st = seg.path.stat()
        last = (self._last_seq, self._last_ts, self._chain)
        self._seals[seg.first_seq] = Seal(
            seg.first_seq, *last, st.st_size, st.st_mtime_ns, st.st_ino
        )
        write_seals(self.directory, self._seals)

    def _commit(self) -> None:
        if not self._dirty or self._fd is None:
            return
        if self.durability == "batch":
            try:
                os.fsync(self._fd)
            except OSError as exc:
                self._roll_back()
                raise LogWriteFailed(
                    self._segments[-1].path, f"fsync failed: {exc.strerror or exc}"
                ) from exc
        self._dirty = False
        self._write_tail()
        self._mark_durable()

    def _mark_durable(self) -> None:
        self._durable = (self._end, self._last_seq, self._last_ts, self._chain, self._prefix_crc)

    def _roll_back(self) -> None:
        """Forget every record since the last commit, in the file and in memory (a
        failed fsync leaves their bytes of unknown fate: they were never acknowledged)."""
        end, self._last_seq, self._last_ts, self._chain, self._prefix_crc = self._durable
        self._cut(end)
        self._end, self._dirty = end, False
        offsets = self._index.get(self._segments[-1].first_seq)
        while offsets and offsets[-1] >= end:
            offsets.pop()

    def _cut(self, end: int) -> None:
        """Truncate the open segment to ``end``; when even that fails, appends are
        refused until the log is reopened (which keeps what reached the disk whole)."""
        assert self._fd is not None
        try:
            os.ftruncate(self._fd, end)
        except OSError as exc:
            self._broken = (
                f"a failed write could not be undone ({exc.strerror or exc}); reopen the brain"
            )

    def _write_tail(self) -> None:
        """Rewrite the TAIL checkpoint; a failure leaves it stale, which is safe."""
        tail = self._tail_now()
        if tail is None:
            return
        try:
            self._tail.write(tail)
        except OSError:
            pass  # a stale TAIL only makes the next open scan further

    def _tail_now(self) -> Tail | None:
        """The TAIL of what this writer holds (None before the first segment)."""
        if not self._segments:
            return None
        seg = self._segments[-1]
        return Tail(
            seg.first_seq, self._end, self._last_seq, self._last_ts, self._chain, self._prefix_crc
        )

    @contextmanager
    def group(self) -> Iterator[None]:
        """Group commit: appends inside share one fsync, taken when the block exits."""
        with self._mutex:
            self._group_depth += 1
            try:
                yield
            finally:
                self._group_depth -= 1
                if self._group_depth == 0:
                    self._commit()

    # ------------------------------------------------------------------ rewriting

    def redact(self, payloads: Mapping[int, bytes]) -> None:
        """Replace the payloads of records (by seq) with redacted records, keeping
        seqs, framing, checksums and the hash chain; every changed segment is
        rewritten and renamed into place, and the log reopened.

        Raises:
            LogError: the log is not a writer or a seq is out of range.
            LogWriteFailed: the disk refused a rewrite (each segment is whole, old or
                redacted; run the command again).
        """
        if not self.writer:
            raise LogWriteFailed(self.directory, "the log was opened read-only")
        with self._mutex:
            bad = [s for s in payloads if not 1 <= s <= self._last_seq]
            if bad:
                raise LogError(f"no record {bad[0]} (the log holds 1..{self._last_seq})")
            self._commit()
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            self._tail.close()  # the TAIL is replaced, not written in place
            try:
                redact_records(self.directory, self._segments, payloads, self._tail_now())
            except OSError as exc:
                raise LogWriteFailed(self.directory, exc.strerror or str(exc)) from exc
            finally:
                self._open()

    def close(self) -> None:
        """Commit pending appends, close the segment and release the lock."""
        with self._mutex:
            try:
                if self._fd is not None:
                    self._commit()
            finally:
                if self._fd is not None:
                    os.close(self._fd)
                    self._fd = None
                self._tail.close()
                if self._lock_fd is not None:
                    os.close(self._lock_fd)
                    self._lock_fd = None

    def __enter__(self) -> SegmentLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
