"""The segment log: append-only files of framed records (the only log I/O).

NOTE: the frame layout is the storage format; change it only with a new magic.

Layout of a log directory::

    00000000000000000001.seg   segments, named by the seq of their first record
    TAIL                       a checkpoint of the end of the log (a hint, never trusted blindly)
    LOCK                       the writer lock (fcntl), holding the writer's pid

A segment is ``MAGIC`` + ``<Q first_seq`` followed by frames::

    <I crc32> <I length|MORE> <Q seq> <q ts>  payload[length]

The crc covers everything after it: the length word, seq, ts and payload. The top
bit of the length word (``MORE``) says that the frame is not the last of its batch: an
append is atomic, so a batch whose last frame is missing is discarded as a whole. A
batch never spans two segments.

On open, a writer scans from the TAIL checkpoint to the end of the last segment: a
frame that is incomplete or fails its checksum with no valid frame after it is a torn
tail, and it is truncated back to the end of the last complete batch (reported in
``recovery``); a bad frame followed by valid frames is corruption and raises
``LogCorrupt`` naming the seq and offset, leaving the file untouched.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
import threading
import zlib
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, overload

import msgspec

from ocb_events.clock import Clock, system_clock
from ocb_events.codec import decode_for_fold, decode_record, encode_record
from ocb_events.errors import BrainLocked, LogConflict, LogCorrupt, LogError, LogWriteFailed
from ocb_events.schema import Event, FoldRecord, Record

MAGIC = b"OCBSEG02"
_SEG_HEADER = struct.Struct("<8sQ")
_FRAME = struct.Struct("<IIQq")  # crc32, length word, seq, ts
_BODY = struct.Struct("<IQq")  # length word, seq, ts: the start of what the crc covers
_TAIL = struct.Struct("<QQQqI")
_MAX_FRAME = 1 << 30
_MORE = 1 << 31
SEGMENT_BYTES = 64 * 1024 * 1024

Durability = Literal["batch", "none"]
_Decode = Callable[..., Record | FoldRecord]


class Recovery(msgspec.Struct, frozen=True):
    """A torn tail found on open, at ``offset``: truncated by a writer (``repaired``),
    left in place and ignored by a reader."""

    segment: str
    offset: int
    dropped_bytes: int
    last_seq: int
    repaired: bool = True


def _scan_offsets(path: Path, first_seq: int) -> array[int]:
    """The offset of every valid frame of a segment, in seq order, found by hopping from
    header to header (no objects per frame); the scan stops at the first frame whose
    seq breaks the sequence or whose length runs past the end."""
    out: array[int] = array("Q")
    buf, size = _map(path)
    try:
        off, expected = _SEG_HEADER.size, first_seq
        unpack, head, mask, add = _BODY.unpack_from, _FRAME.size, ~_MORE, out.append
        while size - off >= head:
            word, seq, _ts = unpack(buf, off + 4)
            end = off + head + (word & mask)
            if seq != expected or end > size:
                break
            add(off)
            off = end
            expected += 1
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()
    return out


class FrameInfo(msgspec.Struct, frozen=True):
    """The header of one valid frame, as found by a scan."""

    offset: int
    seq: int
    ts: int
    length: int
    more: bool

    @property
    def end(self) -> int:
        return self.offset + _FRAME.size + self.length


def _segment_name(first_seq: int) -> str:
    return f"{first_seq:020d}.seg"


def _frame_crc(buf: bytes | memoryview | mmap.mmap, off: int, end: int) -> int:
    """The crc of the frame at ``off``: over its bytes after the crc field."""
    with memoryview(buf)[off + 4 : end] as body:
        return zlib.crc32(body)


def encode_frame(rec: Record, *, more: bool = False) -> bytes:
    """The framed bytes of one record; ``more`` when later frames complete its batch."""
    payload = encode_record(rec)
    body = _BODY.pack(len(payload) | (_MORE if more else 0), rec.seq, rec.ts) + payload
    return struct.pack("<I", zlib.crc32(body)) + body


def _frame_ok(buf: bytes | mmap.mmap, off: int, size: int) -> FrameInfo | None:
    """The frame at ``off`` if its header fits, its payload fits and its crc holds."""
    if size - off < _FRAME.size:
        return None
    crc, word, seq, ts = _FRAME.unpack_from(buf, off)
    length = word & ~_MORE
    end = off + _FRAME.size + length
    if length > _MAX_FRAME or end > size or _frame_crc(buf, off, end) != crc:
        return None
    return FrameInfo(off, seq, ts, length, bool(word & _MORE))


def _valid_frame_after(buf: bytes | mmap.mmap, start: int, size: int, seq: int) -> bool:
    """Whether a valid frame with a seq just after ``seq`` exists past ``start``.

    Looks for the packed seq values of the next few records and checks the frame
    each would belong to: finding one means the damage is in the middle of the log.
    """
    for k in range(1, 33):
        needle = struct.pack("<Q", seq + k)
        pos = buf.find(needle, start)
        while pos >= 0:
            head = pos - 8
            if head >= start and _frame_ok(buf, head, size) is not None:
                return True
            pos = buf.find(needle, pos + 1)
    return False


class _Scan(msgspec.Struct):
    end: int
    last_seq: int
    last_ts: int
    torn_at: int | None = None


def _scan(
    buf: bytes | mmap.mmap, start: int, size: int, first_expected: int, name: str, last_ts: int
) -> _Scan:
    """Walk frames from ``start`` (a batch boundary); stop at a torn tail (ending the
    scan at the last complete batch) or raise on corruption."""
    off, expected = start, first_expected
    done = _Scan(start, first_expected - 1, last_ts)
    while off < size:
        info = _frame_ok(buf, off, size)
        if info is None or info.seq != expected:
            if _valid_frame_after(buf, off + 1, size, expected - 1):
                reason = (
                    "checksum or framing mismatch"
                    if info is None
                    else (f"seq {info.seq} where {expected} was expected")
                )
                raise LogCorrupt(name, off, expected, reason)
            break
        expected += 1
        off = info.end
        if not info.more:
            done = _Scan(off, info.seq, info.ts)
    if done.end < size:
        done.torn_at = done.end
    return done


class _Segment:
    __slots__ = ("first_seq", "path")

    def __init__(self, first_seq: int, path: Path) -> None:
        self.first_seq = first_seq
        self.path = path


def _list_segments(directory: Path) -> list[_Segment]:
    segs = []
    for p in directory.glob("*.seg"):
        stem = p.name[:-4]
        if len(stem) == 20 and stem.isdigit():
            segs.append(_Segment(int(stem), p))
    segs.sort(key=lambda s: s.first_seq)
    return segs


def _map(path: Path) -> tuple[mmap.mmap | bytes, int]:
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return b"", 0
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ), size


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _acquire_lock(directory: Path) -> int:
    fd = os.open(directory / "LOCK", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raw = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        os.close(fd)
        raise BrainLocked(directory.parent, int(raw) if raw.isdigit() else None) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


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

    Raises:
        BrainLocked: another writer holds the lock.
        LogCorrupt: a damaged record with valid records after it.
    """

    def __init__(
        self,
        directory: Path,
        *,
        clock: Clock = system_clock,
        durability: Durability = "batch",
        segment_bytes: int = SEGMENT_BYTES,
        writer: bool = True,
    ) -> None:
        self.directory = Path(directory)
        self._clock = clock
        self.durability: Durability = durability
        self.segment_bytes = segment_bytes
        self.writer = writer
        self.recovery: Recovery | None = None
        self._mutex = threading.RLock()
        self._group_depth = 0
        self._dirty = False
        self._fd: int | None = None
        self._lock_fd: int | None = None
        self._index: dict[int, array[int]] = {}
        self._tail_fd: int | None = None
        if writer:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._lock_fd = _acquire_lock(self.directory)
        try:
            self._open_tail()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ opening

    def _open_tail(self) -> None:
        self._segments = _list_segments(self.directory) if self.directory.exists() else []
        self._last_seq, self._last_ts, self._end = 0, 0, 0
        while self._segments:
            seg = self._segments[-1]
            if self._recover_segment(seg):
                break
            # an empty or headerless last segment: created but never written
            if self.writer:
                seg.path.unlink()
            self._segments.pop()
        if self.writer:
            self._write_tail()

    def _read_tail_hint(self, seg: _Segment, size: int) -> tuple[int, int, int] | None:
        try:
            raw = (self.directory / "TAIL").read_bytes()
        except OSError:
            return None
        if len(raw) != _TAIL.size:
            return None
        first, offset, last_seq, last_ts, crc = _TAIL.unpack(raw)
        if zlib.crc32(raw[:-4]) != crc or first != seg.first_seq or offset > size:
            return None
        if offset < _SEG_HEADER.size:
            return None
        return offset, last_seq, last_ts

    def _recover_segment(self, seg: _Segment) -> bool:
        """Find the end of the last segment; False when it holds no header."""
        buf, size = _map(seg.path)
        try:
            if size < _SEG_HEADER.size:
                return False
            magic, first = _SEG_HEADER.unpack_from(buf, 0)
            if magic != MAGIC or first != seg.first_seq:
                raise LogCorrupt(seg.path.name, 0, seg.first_seq, "bad segment header")
            hint = self._read_tail_hint(seg, size)
            start, last_seq, last_ts = hint or (_SEG_HEADER.size, seg.first_seq - 1, 0)
            if last_ts == 0 and len(self._segments) > 1:
                last_ts = self._segment_last_ts(self._segments[-2])
            scan = _scan(buf, start, size, last_seq + 1, seg.path.name, last_ts)
        finally:
            if isinstance(buf, mmap.mmap):
                buf.close()
        if scan.torn_at is not None:
            if self.writer:
                self._truncate(seg, scan.torn_at, size, scan.last_seq)
            else:
                dropped = size - scan.torn_at
                self.recovery = Recovery(seg.path.name, scan.torn_at, dropped, scan.last_seq, False)
        self._last_seq, self._last_ts, self._end = scan.last_seq, scan.last_ts, scan.end
        return True

    def _segment_last_ts(self, seg: _Segment) -> int:
        offsets = self._offsets(seg)
        if not offsets:
            return 0
        with open(seg.path, "rb") as fh:
            head = os.pread(fh.fileno(), _FRAME.size, offsets[-1])
        return int(_FRAME.unpack(head)[3])

    def _truncate(self, seg: _Segment, offset: int, size: int, last_seq: int) -> None:
        fd = os.open(seg.path, os.O_WRONLY)
        try:
            os.ftruncate(fd, offset)
            os.fsync(fd)
        finally:
            os.close(fd)
        self.recovery = Recovery(seg.path.name, offset, size - offset, last_seq)

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
        limit = self._last_seq if to_seq is None else min(to_seq, self._last_seq)
        from_seq = max(from_seq, 1)
        if from_seq > limit:
            return iter(())
        return self._read(from_seq, limit, decode_for_fold if light else decode_record)

    def _read(self, from_seq: int, limit: int, decode: _Decode) -> Iterator[Record | FoldRecord]:
        segs = self._segments
        idx = 0
        for i, seg in enumerate(segs):
            if seg.first_seq <= from_seq:
                idx = i
        for seg in segs[idx:]:
            if seg.first_seq > limit:
                return
            yield from self._read_segment(seg, from_seq, limit, decode)

    def _offsets(self, seg: _Segment) -> array[int]:
        """Offset of every frame of a segment by ``seq - first_seq`` (built once)."""
        got = self._index.get(seg.first_seq)
        if got is None:
            got = _scan_offsets(seg.path, seg.first_seq)
            self._index[seg.first_seq] = got
        return got

    def ts_of(self, seq: int) -> int:
        """The ts of record ``seq`` (read from its frame header, no decoding).

        Raises:
            LogError: ``seq`` is outside 1..last_seq.
        """
        if not 1 <= seq <= self._last_seq:
            raise LogError(f"no record {seq} (the log holds 1..{self._last_seq})")
        seg = next(s for s in reversed(self._segments) if s.first_seq <= seq)
        off = self._offsets(seg)[seq - seg.first_seq]
        with open(seg.path, "rb") as fh:
            head = os.pread(fh.fileno(), _FRAME.size, off)
        return int(_FRAME.unpack(head)[3])

    def _read_segment(
        self, seg: _Segment, from_seq: int, limit: int, decode: _Decode
    ) -> Iterator[Record | FoldRecord]:
        off, expected = _SEG_HEADER.size, seg.first_seq
        if from_seq > seg.first_seq:
            offsets = self._offsets(seg)
            k = from_seq - seg.first_seq
            if k < len(offsets):
                off, expected = offsets[k], from_seq
        buf, size = _map(seg.path)
        name = seg.path.name
        view = memoryview(buf)
        unpack, crc32 = _FRAME.unpack_from, zlib.crc32
        try:
            while off < size and expected <= limit:
                if size - off < _FRAME.size:
                    break
                crc, word, seq, ts = unpack(buf, off)
                end = off + _FRAME.size + (word & ~_MORE)
                if seq != expected or end > size:
                    raise LogCorrupt(name, off, expected, "framing mismatch")
                if seq >= from_seq:
                    with view[off + 4 : end] as body:
                        if crc32(body) != crc:
                            raise LogCorrupt(name, off, seq, "checksum mismatch")
                    with view[off + _FRAME.size : end] as payload:
                        rec = decode(payload, segment=name, offset=off)
                    yield rec
                off = end
                expected += 1
            # records must continue in the next segment (or end the log here)
            if expected <= limit and all(s.first_seq != expected for s in self._segments):
                raise LogCorrupt(name, off, expected, "record missing")
        finally:
            view.release()
            if isinstance(buf, mmap.mmap):
                buf.close()

    # ------------------------------------------------------------------ writing

    def append(
        self, events: Sequence[Event], *, actor: str, expected_seq: int | None = None
    ) -> list[Record]:
        """Append ``events`` as one batch (one write, one fsync under ``"batch"``).

        Raises:
            LogConflict: ``expected_seq`` is stale.
            LogWriteFailed: the disk refused the write; the segment is rolled back.
        """
        if not self.writer:
            raise LogWriteFailed(self.directory, "the log was opened read-only")
        with self._mutex:
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
            last = len(recs) - 1
            frames = [encode_frame(r, more=i < last) for i, r in enumerate(recs)]
            start = self._write(b"".join(frames), first)
            offsets = self._index.get(self._segments[-1].first_seq)
            if offsets is not None:
                for frame in frames:
                    offsets.append(start)
                    start += len(frame)
            self._last_seq = recs[-1].seq
            self._last_ts = ts
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
            os.ftruncate(self._fd, start)
            raise LogWriteFailed(self._segments[-1].path, exc.strerror or str(exc)) from exc
        self._end = start + len(data)
        self._dirty = True
        return start

    def _ensure_segment(self, first_seq: int) -> None:
        """Open the last segment for appending, or start a new one when it is full."""
        if self._segments and self._end < self.segment_bytes:
            if self._fd is None:
                self._fd = os.open(self._segments[-1].path, os.O_WRONLY | os.O_APPEND)
            return
        if self._fd is not None:
            self._commit()
            os.close(self._fd)
            self._fd = None
        path = self.directory / _segment_name(first_seq)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        os.write(fd, _SEG_HEADER.pack(MAGIC, first_seq))
        os.fsync(fd)
        _fsync_dir(self.directory)
        self._segments.append(_Segment(first_seq, path))
        self._fd = fd
        self._end = _SEG_HEADER.size

    def _commit(self) -> None:
        if not self._dirty or self._fd is None:
            return
        if self.durability == "batch":
            os.fsync(self._fd)
        self._dirty = False
        self._write_tail()

    def _write_tail(self) -> None:
        """Overwrite the TAIL hint in place: a torn hint fails its crc and is ignored."""
        if not self._segments:
            return
        body = _TAIL.pack(self._segments[-1].first_seq, self._end, self._last_seq, self._last_ts, 0)
        data = body[:-4] + struct.pack("<I", zlib.crc32(body[:-4]))
        if self._tail_fd is None:
            self._tail_fd = os.open(self.directory / "TAIL", os.O_WRONLY | os.O_CREAT, 0o644)
            os.ftruncate(self._tail_fd, _TAIL.size)
        os.pwrite(self._tail_fd, data, 0)

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

    def close(self) -> None:
        """Commit pending appends, close the segment and release the lock."""
        with self._mutex:
            if self._fd is not None:
                self._commit()
                os.close(self._fd)
                self._fd = None
            if self._tail_fd is not None:
                os.close(self._tail_fd)
                self._tail_fd = None
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None

    def __enter__(self) -> SegmentLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SegmentReport(msgspec.Struct, frozen=True):
    """The result of verifying one segment end to end."""

    segment: str
    records: int
    first_seq: int
    last_seq: int


def verify_log(directory: Path) -> list[SegmentReport]:
    """Check framing, checksums, decoding and seq continuity of every segment.

    Raises:
        LogCorrupt: naming the first bad seq and its offset.
        UnknownEventType: a record this version cannot decode.
    """
    reports: list[SegmentReport] = []
    expected = 1
    segs = _list_segments(Path(directory))
    for i, seg in enumerate(segs):
        if seg.first_seq != expected:
            raise LogCorrupt(seg.path.name, 0, expected, f"segment starts at seq {seg.first_seq}")
        buf, size = _map(seg.path)
        try:
            if size < _SEG_HEADER.size:
                if i == len(segs) - 1:
                    break
                raise LogCorrupt(seg.path.name, 0, expected, "segment has no header")
            scan = _scan(buf, _SEG_HEADER.size, size, expected, seg.path.name, 0)
            if scan.torn_at is not None and i < len(segs) - 1:
                raise LogCorrupt(seg.path.name, scan.torn_at, scan.last_seq + 1, "truncated record")
            off = _SEG_HEADER.size
            while off < scan.end:
                length = _FRAME.unpack_from(buf, off)[1] & ~_MORE
                payload = memoryview(buf)[off + _FRAME.size : off + _FRAME.size + length]
                try:
                    decode_record(payload, segment=seg.path.name, offset=off)
                finally:
                    payload.release()
                off += _FRAME.size + length
        finally:
            if isinstance(buf, mmap.mmap):
                buf.close()
        reports.append(
            SegmentReport(seg.path.name, scan.last_seq - expected + 1, expected, scan.last_seq)
        )
        expected = scan.last_seq + 1
    return reports
