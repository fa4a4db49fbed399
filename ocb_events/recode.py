"""Rewriting a whole log in the current storage format (``ocb verify --rewrite``):
every record in the current encoding (``ocb_events.codec``), every full segment stored
compressed (``ocb_events.blocks``), the hash chain recomputed over the new payloads.

The records keep their seqs, timestamps, actors, batches and content (a redacted frame
keeps its bytes, a tombstone stays a tombstone); only their bytes change, and with
them every chain value from the first record whose bytes changed. The new log is built
beside the old one (``log.rewrite``), verified, read back and compared record by record
with the old one, then swapped in with one atomic exchange of the two directories
(``renameat2(RENAME_EXCHANGE)``), so a crash at any point leaves one whole log in
place: the old one until the exchange, the new one after it. What is left of a crashed
rewrite is removed by the next one.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import shutil
import zlib
from collections.abc import Callable
from pathlib import Path

import msgspec

from ocb_events.codec import decode_record, encode_record
from ocb_events.durable import fsync_dir, open_private, private_dir
from ocb_events.errors import LogError, LogWriteFailed
from ocb_events.frames import (
    CURRENT,
    LOST,
    REDACTED,
    ZERO_CHAIN,
    encode_frame,
    frame_header,
    map_file,
    read_header,
    scan_offsets,
    segment_header,
)
from ocb_events.integrity import verify_log
from ocb_events.log import SegmentLog
from ocb_events.marks import Seal, Tail, replace_tail, write_seals
from ocb_events.rewrite import compress_segment, seal_of
from ocb_events.segments import Segment, acquire_lock, list_segments

REWRITE_SUFFIX = ".rewrite"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


class Recoded(msgspec.Struct, frozen=True):
    """What a rewrite did: records read and re-encoded (``changed``: those whose bytes
    changed, from seq ``first_changed``, where the chain starts to differ; 0 when none
    did), segment bytes before and after, and the heads of the chain before and
    after (seq, hex), the old one no longer in the log."""

    records: int
    changed: int
    first_changed: int
    bytes_before: int
    bytes_after: int
    old_head: tuple[int, str]
    new_head: tuple[int, str]


Step = Callable[[str], None]
"""Told each stage of a rewrite: ``built``, ``checked``, ``exchanged``."""


def rewrite_log(directory: Path, *, step: Step | None = None) -> Recoded:
    """Rewrite the log in ``directory`` in the current storage format (holding its
    writer lock for the time).

    Raises:
        BrainLocked: another process writes the log.
        LogCorrupt: the log does not verify (nothing is changed).
        LogWriteFailed: the disk refused a write, or the two directories cannot be
            exchanged atomically here (the old log stays in place).
    """
    directory = Path(directory)
    fresh = directory.with_name(directory.name + REWRITE_SUFFIX)
    lock = acquire_lock(directory)
    try:
        shutil.rmtree(fresh, ignore_errors=True)
        verify_log(directory)
        before = sum(s.path.stat().st_size for s in list_segments(directory))
        records, changed, first, old_head, new_head = _build(directory, fresh)
        if step is not None:
            step("built")
        verify_log(fresh)
        _same_records(directory, fresh)
        if step is not None:
            step("checked")
        after = sum(s.path.stat().st_size for s in list_segments(fresh))
        _exchange(fresh, directory)
        if step is not None:
            step("exchanged")
    except OSError as exc:
        raise LogWriteFailed(directory, exc.strerror or str(exc)) from exc
    finally:
        os.close(lock)
    shutil.rmtree(fresh, ignore_errors=True)
    return Recoded(records, changed, first, before, after, old_head, new_head)


def _build(directory: Path, fresh: Path) -> tuple[int, int, int, tuple[int, str], tuple[int, str]]:
    """Write every segment of ``directory`` anew into ``fresh`` (same first seqs);
    returns the records, those re-encoded differently, the first of those (0: none),
    and the old and new heads."""
    private_dir(fresh)
    segs = list_segments(directory)
    chain, records, changed, first = ZERO_CHAIN, 0, 0, 0
    old_head: tuple[int, str] = (0, ZERO_CHAIN.hex())
    seals: dict[int, Seal] = {}
    tail: Tail | None = None
    for i, seg in enumerate(segs):
        out, chain, stats = _segment(seg, chain)
        if stats.last_seq < seg.first_seq:
            continue  # a last segment with no record
        records, changed = records + stats.records, changed + stats.changed
        first = first or stats.first_changed
        old_head = (stats.last_seq, stats.old_chain.hex())
        path = fresh / seg.name
        fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "wb") as fh:
            fh.write(out)
            fh.flush()
            os.fsync(fh.fileno())
        if i < len(segs) - 1:
            new = Segment(seg.first_seq, path)
            compress_segment(new, scan_offsets(path, seg.first_seq, CURRENT))
            last = (stats.last_seq, stats.last_ts)
            seals[seg.first_seq] = seal_of(path, seg.first_seq, *last, chain)
        else:
            tail = Tail(
                seg.first_seq, len(out), stats.last_seq, stats.last_ts, chain, zlib.crc32(out)
            )
    write_seals(fresh, seals)
    replace_tail(fresh, tail)
    fsync_dir(fresh)
    return records, changed, first, old_head, (old_head[0], chain.hex())


class _Stats(msgspec.Struct):
    records: int = 0
    changed: int = 0
    first_changed: int = 0
    last_seq: int = 0
    last_ts: int = 0
    old_chain: bytes = ZERO_CHAIN


def _segment(seg: Segment, chain: bytes) -> tuple[bytes, bytes, _Stats]:
    """The bytes of a segment rewritten from ``chain``, the chain after it, and what
    it held."""
    buf, size = map_file(seg.path)
    stats = _Stats(last_seq=seg.first_seq - 1)
    try:
        head = read_header(buf, size, seg.name, seg.first_seq)
        if head is None:
            return b"", chain, stats
        fmt = head[0]
        out = bytearray(segment_header(seg.first_seq, chain))
        off = fmt.header_size
        while off < size:
            info = frame_header(buf, off, size, fmt)
            if info is None or info.end > size:
                break  # a torn tail, which the writer drops too
            payload = bytes(buf[off + info.header : info.end])
            flags = info.flags & (REDACTED | LOST)
            if not flags & REDACTED:
                new = encode_record(decode_record(payload, segment=seg.name, offset=off))
                if new != payload:
                    stats.changed += 1
                    stats.first_changed = stats.first_changed or info.seq
                payload = new
            frame, chain = encode_frame(
                info.seq, info.ts, payload, chain, more=info.more, flags=flags
            )
            out += frame
            stats.records += 1
            stats.last_seq, stats.last_ts = info.seq, info.ts
            stats.old_chain = info.chain
            off = info.end
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()
    return bytes(out), chain, stats


def _same_records(old: Path, new: Path) -> None:
    """Check that two logs hold equal records, seq by seq.

    Raises:
        LogError: they differ (naming the first seq that does).
    """
    with SegmentLog(old, writer=False) as a, SegmentLog(new, writer=False) as b:
        if a.last_seq != b.last_seq:
            raise LogError(f"the rewritten log holds {b.last_seq} records, not {a.last_seq}")
        for x, y in zip(a.read(), b.read(), strict=True):
            if x != y:
                raise LogError(f"record {x.seq} differs once rewritten; the log was left as it was")


def _exchange(a: Path, b: Path) -> None:
    """Swap two directories atomically.

    Raises:
        OSError: the system or file system cannot (nothing was changed).
    """
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        raise OSError(38, "this system cannot exchange two directories atomically")
    got = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if got != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    fsync_dir(b.parent)
