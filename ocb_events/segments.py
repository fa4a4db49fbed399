"""Segment files of a log directory: listing, locking, reading a segment's header and
frames, and verifying a segment end to end (framing, checksums, seqs, hash chain)."""

from __future__ import annotations

import fcntl
import mmap
import os
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from ocb_events.blocks import Block, Packed, is_packed
from ocb_events.durable import open_private
from ocb_events.errors import BrainLocked, LogCorrupt
from ocb_events.frames import (
    DIGEST_BYTES,
    FORMATS,
    HEAD,
    LENGTH_MASK,
    MAX_FRAME,
    MORE,
    REDACTED,
    Format,
    content_digest,
    crc_ok,
    frame_header,
    link,
    map_file,
    read_header,
    scan,
)
from ocb_events.marks import Seal

_HEADER_MAX = max(f.header_size for f in FORMATS.values())


class Recovery(msgspec.Struct, frozen=True):
    """A torn tail found on open, at ``offset``: truncated by a writer (``repaired``),
    left in place and ignored by a reader."""

    segment: str
    offset: int
    dropped_bytes: int
    last_seq: int
    repaired: bool = True


class Segment:
    """One segment file: its first seq, path and (once read) format."""

    __slots__ = ("first_seq", "fmt", "path")

    def __init__(self, first_seq: int, path: Path, fmt: Format | None = None) -> None:
        self.first_seq = first_seq
        self.path = path
        self.fmt = fmt

    @property
    def name(self) -> str:
        return self.path.name


def segment_name(first_seq: int) -> str:
    return f"{first_seq:020d}.seg"


def list_segments(directory: Path) -> list[Segment]:
    """The segment files of a log directory, by first seq."""
    segs = []
    for p in directory.glob("*.seg"):
        stem = p.name[:-4]
        if len(stem) == 20 and stem.isdigit():
            segs.append(Segment(int(stem), p))
    segs.sort(key=lambda s: s.first_seq)
    return segs


def acquire_lock(directory: Path) -> int:
    """Take the writer lock of a log directory (its fd); raises BrainLocked."""
    fd = open_private(directory / "LOCK", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raw = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        os.close(fd)
        raise BrainLocked(directory.parent, int(raw) if raw.isdigit() else None) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def verify_segment(seg: Segment, prev: Seal | None, *, last: bool = False) -> tuple[Seal, int]:
    """Verify a whole segment: header, framing, checksums, seqs and hash chain, and its
    link to the segment before it (``prev``). Returns its seal and the end of its last
    complete batch.

    Raises:
        LogCorrupt: naming the first damaged record (a torn region counts only in the
            last segment, where it is left for the writer's recovery).
    """
    st = seg.path.stat()
    buf, size = map_file(seg.path)
    try:
        head = read_header(buf, size, seg.name, seg.first_seq)
        if head is None:
            raise LogCorrupt(seg.name, 0, seg.first_seq, "segment has no header")
        fmt, prev_chain = head
        seg.fmt = fmt
        if fmt.chained and prev is not None and prev.chain and prev_chain != prev.chain:
            raise LogCorrupt(seg.name, 0, seg.first_seq, "hash chain broken between segments")
        last_ts = prev.last_ts if prev is not None else 0
        got = scan(
            buf, fmt.header_size, size, first_expected=seg.first_seq, name=seg.name,
            last_ts=last_ts, chain=prev_chain, fmt=fmt,
        )  # fmt: skip
        if got.torn_at is not None and not last:
            raise LogCorrupt(seg.name, got.torn_at, got.last_seq + 1, "truncated record")
        if fmt.chained:
            check_chain(buf, seg, fmt, fmt.header_size, got.end, prev_chain)
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()
    seal = Seal(
        seg.first_seq, got.last_seq, got.last_ts, got.chain, st.st_size, st.st_mtime_ns, st.st_ino
    )
    return seal, got.end


def check_chain(
    buf: bytes | mmap.mmap, seg: Segment, fmt: Format, start: int, end: int, chain: bytes
) -> None:
    """Recompute the chain of every frame in ``[start, end)`` from ``chain``.

    Raises:
        LogCorrupt: at the first frame whose stored chain does not link.
    """
    off = start
    while off < end:
        info = frame_header(buf, off, end, fmt)
        assert info is not None
        chain = link(chain, info.seq, info.ts, content_digest(buf, info))
        if chain != info.chain:
            raise LogCorrupt(seg.name, off, info.seq, "hash chain broken")
        off = info.end


def locate_damage(
    buf: bytes | mmap.mmap, seg: Segment, fmt: Format, end: int, chain: bytes
) -> None:
    """Find why the bytes before ``end`` changed and raise naming the record.

    Raises:
        LogCorrupt: always.
    """
    off, expected = fmt.header_size, seg.first_seq
    while off < end:
        info = frame_header(buf, off, end, fmt)
        if info is None or info.seq != expected or info.length > MAX_FRAME or info.end > end:
            raise LogCorrupt(seg.name, off, expected, "framing mismatch")
        if not crc_ok(buf, info):
            raise LogCorrupt(seg.name, off, expected, "checksum mismatch")
        chain = link(chain, info.seq, info.ts, content_digest(buf, info))
        if chain != info.chain:
            raise LogCorrupt(seg.name, off, info.seq, "hash chain broken")
        off, expected = info.end, expected + 1
    raise LogCorrupt(seg.name, 0, seg.first_seq, "segment changed since its last commit")


def segment_head(seg: Segment) -> tuple[Format, bytes] | None:
    """The header of a segment's file (``read_header``): None when it is shorter than
    any header.

    Raises:
        LogCorrupt: an unknown magic or a first seq that does not match the name.
    """
    box = packed(seg.path)
    data = read_at(seg.path, 0, _HEADER_MAX) if box is None else box.head()[:_HEADER_MAX]
    return read_header(data, len(data), seg.name, seg.first_seq)


def is_compressed(path: Path) -> bool:
    """Whether a segment file is stored compressed (``ocb_events.blocks``)."""
    with open(path, "rb") as fh:
        return is_packed(fh.read(8))


def packed(path: Path) -> Packed | None:
    """The block table of a segment file stored compressed; None for a plain one."""
    with open(path, "rb") as fh:
        return packed_file(fh, path)


def packed_file(fh: BinaryIO, path: Path) -> Packed | None:
    """``packed`` of the segment file open as ``fh``: a reader that goes on reading a
    plain segment from ``fh`` reads the file it found plain, even if the writer has
    meanwhile renamed the segment compressed over it."""
    return Packed(path, fh) if is_packed(os.pread(fh.fileno(), 8, 0)) else None


def read_at(path: Path, off: int, n: int) -> bytes:
    """Up to ``n`` bytes of a segment at ``off`` (decompressing the block that holds
    them when the segment is stored compressed; a frame never spans two blocks).

    Raises:
        LogCorrupt: the block is damaged.
    """
    with open(path, "rb") as fh:
        box = packed_file(fh, path)
        if box is None:
            return os.pread(fh.fileno(), n, off)
    i = box.block_of_offset(off)
    base = box.blocks[i].offset if box.blocks else 0
    return box.read(i, i)[off - base : off - base + n]


def segment_format(seg: Segment) -> Format:
    """The format of a segment, read from its header once.

    Raises:
        LogCorrupt: the segment has no header.
    """
    if seg.fmt is None:
        head = segment_head(seg)
        if head is None:
            raise LogCorrupt(seg.name, 0, seg.first_seq, "segment has no header")
        seg.fmt = head[0]
    return seg.fmt


def read_frames(
    seg: Segment, fmt: Format, off: int, expected: int, from_seq: int, limit: int,
    decode: Callable[..., Any], segs: Sequence[Segment],
) -> Iterator[Any]:  # fmt: skip
    """Decode the records ``from_seq..limit`` of a segment, reading from the frame of
    seq ``expected`` at ``off``; each checksum is verified. The records must
    continue in one of ``segs`` (every segment of the log), or end the log here.

    Raises:
        LogCorrupt: framing or a checksum that does not hold, or a record missing.
    """
    buf, base, size, off, expected = _frames_from(seg, off, expected, from_seq, limit)
    name = seg.name
    view = memoryview(buf)
    unpack, crc32, head = HEAD.unpack_from, zlib.crc32, fmt.frame_size
    mask = LENGTH_MASK if fmt.chained else ~MORE
    redacted = REDACTED if fmt.chained else 0
    try:
        while off < size and expected <= limit:
            if size - off < head:
                break
            crc, word, seq, _ = unpack(buf, off - base)
            end = off + head + (word & mask)
            if seq != expected or end > size:
                raise LogCorrupt(name, off, expected, "framing mismatch")
            if seq >= from_seq:
                with view[off - base + 4 : end - base] as body:
                    if crc32(body) != crc:
                        raise LogCorrupt(name, off, seq, "checksum mismatch")
                start = off + head + (DIGEST_BYTES if word & redacted else 0)
                with view[start - base : end - base] as payload:
                    rec = decode(payload, segment=name, offset=off)
                yield rec
            off = end
            expected += 1
        _check_end(name, off, expected, limit, segs)
    finally:
        view.release()
        if isinstance(buf, mmap.mmap):
            buf.close()


RunDecode = Callable[[list[memoryview], Sequence[int], str], Iterable[Any]]
"""Decodes the payloads of a run of frames (given with the frames' offsets and the
segment's name, for errors) into their records, in order."""
PLAIN_RUN = 256
"""The most frames of a plain segment decoded together."""


def read_runs(
    seg: Segment, fmt: Format, off: int, expected: int, from_seq: int, limit: int,
    decode: RunDecode, segs: Sequence[Segment], *, light: bool = False,
) -> Iterator[Iterable[Any]]:  # fmt: skip
    """The records ``from_seq..limit`` of a segment as ``read_frames`` reads them (from
    the frame of seq ``expected`` at ``off``), a run of frames at a time: a block of a
    compressed segment, or up to ``PLAIN_RUN`` frames of a plain one. The frames of a
    block are not checked one by one: the block's checksum covers their bytes, which
    were checked when the segment was compressed (``ocb_events.rewrite``).

    Args:
        light: ``decode`` reads records as a fold does (``ocb_events.codec``'s fold
            decoders, which skip a trace's body): a block of an ``OCBSEGZ2`` container
            then gives its light payloads (``ocb_events.bodies``), taken from its table
            with no walk over its frames, and its heavy bytes are not read.

    Raises:
        LogCorrupt: framing or a checksum that does not hold, or a record missing.
    """
    with open(seg.path, "rb") as fh:  # every read of this segment from this file
        yield from _read_runs(seg, fh, fmt, off, expected, from_seq, limit, decode, segs, light)


def _read_runs(
    seg: Segment, fh: BinaryIO, fmt: Format, off: int, expected: int, from_seq: int,
    limit: int, decode: RunDecode, segs: Sequence[Segment], light: bool,
) -> Iterator[Iterable[Any]]:  # fmt: skip
    name = seg.name
    box = packed_file(fh, seg.path)
    if light and box is not None and box.v2 and box.blocks:
        for views, offsets in _light_runs(box, from_seq, limit):
            yield decode(views, offsets, name)
        at, expected = _past_blocks(box, limit)
    else:
        if box is None or not box.blocks:
            data = fh.read()
            parts: Iterator[tuple[bytes, int, int, int]] = iter([(data, 0, off, expected)])
            check = True
        else:
            parts = _blocks(box, fmt, from_seq, limit)
            check = False
        for data, base, at, expected in parts:
            view, end = memoryview(data), base + len(data)
            while True:
                views, offsets, at, expected, full = _frames(
                    view, base, at, end, expected, from_seq, limit, fmt, name, check
                )
                if views:
                    yield decode(views, offsets, name)
                if not full:
                    break
    _check_end(name, at, expected, limit, segs)


def _check_end(name: str, at: int, expected: int, limit: int, segs: Sequence[Segment]) -> None:
    """Raise unless the records a read stopped short of (from ``expected``, at segment
    offset ``at``) go on in another segment of ``segs``, or were never asked for."""
    if expected <= limit and all(s.first_seq != expected for s in segs):
        raise LogCorrupt(name, at, expected, "record missing")


def _spans(box: Packed, from_seq: int, limit: int) -> Iterator[tuple[Block, int, int]]:
    """The blocks of an ``OCBSEGZ2`` container holding records ``from_seq..limit``, each
    with the frames ``lo..hi-1`` of it those are."""
    for i in range(box.block_of_seq(from_seq), box.block_of_seq(limit) + 1):
        b = box.blocks[i]
        lo = max(from_seq - b.first_seq, 0)
        hi = min(limit - b.first_seq + 1, b.frames)
        if hi > lo:
            yield b, lo, hi


def _past_blocks(box: Packed, limit: int) -> tuple[int, int]:
    """Where a read of an ``OCBSEGZ2`` container up to ``limit`` stops: the end of the
    segment and the seq after its last record read."""
    tail = box.blocks[-1]
    return box.size, min(limit, tail.first_seq + tail.frames - 1) + 1


BodyRunDecode = Callable[[list[memoryview], Sequence[int], str, list[Any] | None], Iterable[Any]]
"""A ``RunDecode`` that also takes, for each payload, the bin of the trace body taken
out of it (a light payload of an ``OCBSEGZ2`` block: ``Table.bins``), or None for all
of them when every payload is whole."""


def read_body_runs(
    seg: Segment, fmt: Format, off: int, expected: int, from_seq: int, limit: int,
    decode: BodyRunDecode, segs: Sequence[Segment],
) -> Iterator[Iterable[Any]]:  # fmt: skip
    """The records ``from_seq..limit`` of a segment as ``read_runs`` reads them, for a
    reader of trace bodies that needs no whole payload: an ``OCBSEGZ2`` block gives
    its light payloads from its table and each trace body apart, from its heavy bytes
    (checked, not spliced back; ``Packed.parts``); any other segment its whole
    payloads.

    Raises:
        LogCorrupt: framing or a checksum that does not hold, or a record missing.
    """
    with open(seg.path, "rb") as fh:
        box = packed_file(fh, seg.path)
        if box is None or not box.v2 or not box.blocks:
            yield from _read_runs(
                seg, fh, fmt, off, expected, from_seq, limit,
                lambda views, offsets, name: decode(views, offsets, name, None), segs, False,
            )  # fmt: skip
            return
        for b, lo, hi in _spans(box, from_seq, limit):
            light, table, heavy = box.parts(b)
            try:
                bins = table.bins(light, memoryview(heavy), lo, hi)
            except ValueError as exc:
                raise LogCorrupt(
                    seg.name, b.offset, b.first_seq, f"damaged heavy part: {exc}"
                ) from exc
            views, _ = table.payloads(memoryview(light), b.offset, lo, hi)
            yield decode(views, table.offsets(b.offset, lo, hi), seg.name, bins)
        at, expected = _past_blocks(box, limit)
    _check_end(seg.name, at, expected, limit, segs)


def _light_runs(
    box: Packed, from_seq: int, limit: int
) -> Iterator[tuple[list[memoryview], Sequence[int]]]:
    """The light payloads of the records ``from_seq..limit`` of an ``OCBSEGZ2``
    container, a block at a time, with the frames' segment offsets (``read_runs``)."""
    for b, lo, hi in _spans(box, from_seq, limit):
        data, table = box.light(b, box.stored(b, light=True))
        yield table.payloads(memoryview(data), b.offset, lo, hi)


def payload_skips(data: bytes, seg: Segment, offsets: Sequence[int]) -> list[int] | None:
    """Where each frame's payload starts in it (past a redacted frame's digest), when
    every frame of a segment's bytes ``data`` (starting at ``offsets``) holds its
    checksum and the frames fill the segment to its end; None otherwise. A segment is
    compressed only then, so that a block's checksum stands for its frames'
    (``read_runs``)."""
    head = read_header(data, len(data), seg.name, seg.first_seq)
    if head is None:
        return None
    fmt, view = head[0], memoryview(data)
    mask = LENGTH_MASK if fmt.chained else ~MORE
    redacted = REDACTED if fmt.chained else 0
    unpack, crc32, size = HEAD.unpack_from, zlib.crc32, fmt.frame_size
    skips, ends = [], [*offsets[1:], len(data)]
    for off, end in zip(offsets, ends, strict=True):
        crc, word, _, _ = unpack(data, off)
        if off + size + (word & mask) != end or crc32(view[off + 4 : end]) != crc:
            return None
        skips.append(size + (DIGEST_BYTES if word & redacted else 0))
    return skips


def _blocks(
    box: Packed, fmt: Format, from_seq: int, limit: int
) -> Iterator[tuple[bytes, int, int, int]]:
    """The blocks holding records ``from_seq..limit``, decompressed one at a time: their
    bytes, the segment offsets they start at and where their first frame is, and the
    seq of that frame."""
    for i in range(box.block_of_seq(from_seq), box.block_of_seq(limit) + 1):
        b = box.blocks[i]
        data = box.block(b, box.stored(b))
        yield data, b.offset, b.offset + (fmt.header_size if i == 0 else 0), b.first_seq


def _frames(
    view: memoryview, base: int, off: int, end: int, expected: int, from_seq: int,
    limit: int, fmt: Format, name: str, check: bool,
) -> tuple[list[memoryview], list[int], int, int, bool]:  # fmt: skip
    """The payloads of the frames from ``off`` to ``end`` (segment offsets; ``view``
    starts at ``base``) up to seq ``limit``, and their offsets (a plain segment's: at
    most ``PLAIN_RUN``, each checksum checked); with the offset and seq where reading
    goes on, and whether it stopped only for the count."""
    if not check:
        return _block_frames(view, base, off, end, expected, from_seq, limit, fmt, name)
    views: list[memoryview] = []
    offsets: list[int] = []
    unpack, crc32, head = HEAD.unpack_from, zlib.crc32, fmt.frame_size
    mask = LENGTH_MASK if fmt.chained else ~MORE
    redacted = REDACTED if fmt.chained else 0
    most = PLAIN_RUN
    while end - off >= head and expected <= limit:
        if len(views) >= most:
            return views, offsets, off, expected, True
        crc, word, seq, _ = unpack(view, off - base)
        stop = off + head + (word & mask)
        if seq != expected or stop > end:
            raise LogCorrupt(name, off, expected, "framing mismatch")
        if seq >= from_seq:
            if check and crc32(view[off - base + 4 : stop - base]) != crc:
                raise LogCorrupt(name, off, seq, "checksum mismatch")
            start = off + head + (DIGEST_BYTES if word & redacted else 0)
            views.append(view[start - base : stop - base])
            offsets.append(off)
        off = stop
        expected += 1
    return views, offsets, off, expected, False


def _block_frames(
    view: memoryview, base: int, off: int, end: int, expected: int, from_seq: int,
    limit: int, fmt: Format, name: str,
) -> tuple[list[memoryview], list[int], int, int, bool]:  # fmt: skip
    """``_frames`` for a decompressed block, whose frames the block's checksum covers:
    every frame to ``end`` in one pass (a rebuild's hot loop, a step per record)."""
    views: list[memoryview] = []
    offsets: list[int] = []
    add_view, add_offset = views.append, offsets.append
    unpack, head = HEAD.unpack_from, fmt.frame_size
    mask = LENGTH_MASK if fmt.chained else ~MORE
    redacted = REDACTED if fmt.chained else 0
    at, stop_at = off - base, end - base
    while stop_at - at >= head and expected <= limit:
        word, seq = unpack(view, at)[1:3]
        after = at + head + (word & mask)
        if seq != expected or after > stop_at:
            raise LogCorrupt(name, at + base, expected, "framing mismatch")
        if seq >= from_seq:
            add_view(view[at + head + (DIGEST_BYTES if word & redacted else 0) : after])
            add_offset(at + base)
        at = after
        expected += 1
    return views, offsets, at + base, expected, False


def packed_head(seg: Segment, seq: int, fmt: Format) -> bytes | None:
    """The frame header of record ``seq`` of a compressed segment (None for a plain
    segment), decompressing only the block that holds it.

    Raises:
        LogCorrupt: the block is damaged or does not hold the record.
    """
    box = packed(seg.path)
    if box is None or not box.blocks:
        return None
    i = box.block_of_seq(seq)
    b = box.blocks[i]
    if box.v2:  # the frame headers are whole in the light part, the table says where
        light, table = box.light(b, box.stored(b, light=True))
        k = seq - b.first_seq
        off = int(table.ends[k] - table.lengths[k]) if 0 <= k < b.frames else len(light)
        head = light[off : off + fmt.frame_size]
    else:
        data = box.read(i, i)
        off, at = (fmt.header_size if i == 0 else 0), b.first_seq
        mask = LENGTH_MASK if fmt.chained else ~MORE
        while at < seq and len(data) - off >= fmt.frame_size:
            off += fmt.frame_size + (HEAD.unpack_from(data, off)[1] & mask)
            at += 1
        head = data[off : off + fmt.frame_size]
    if len(head) < fmt.frame_size or HEAD.unpack_from(head)[2] != seq:
        raise LogCorrupt(seg.name, box.blocks[i].offset, seq, "record missing")
    return head


def _frames_from(
    seg: Segment, off: int, expected: int, from_seq: int, limit: int
) -> tuple[mmap.mmap | bytes, int, int, int, int]:
    """The bytes of a segment to read records ``expected..limit`` from ``off``: its
    map, or for a compressed segment the blocks that hold them; with the segment offset
    they start at and end at, and the offset and seq of the first frame to read."""
    box = packed(seg.path)
    if box is None or not box.blocks:
        buf, size = map_file(seg.path)
        return buf, 0, size, off, expected
    first, last = box.block_of_seq(max(expected, from_seq)), box.block_of_seq(limit)
    data = box.read(first, last)
    if first == 0:
        return data, 0, len(data), off, expected
    block = box.blocks[first]
    return data, block.offset, block.offset + len(data), block.offset, block.first_seq
