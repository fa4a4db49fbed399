"""Segment and frame formats of the log, and the hash chain through its records.

NOTE: the layouts here are the storage format; change them only with a new magic.

Two formats exist. ``OCBSEG02`` (read only; a writer rewrites it as the current
format on open) and ``OCBSEG03``, which chains every record to the whole history
before it::

    segment  MAGIC <Q first_seq> <16s chain of record first_seq - 1>
    frame    <I crc32> <I word> <Q seq> <q ts> <16s chain>  payload[length]

``word`` is the payload length with three flags in its top bits: ``MORE`` (the frame
is not the last of its batch), ``REDACTED`` (the payload is the original payload's
digest followed by a redacted record: ``ocb forget``) and ``LOST`` (a tombstone put
in place of a record that was damaged or lost: ``ocb verify --repair``). The crc
covers everything after it.

The chain of record ``n`` is ``H(chain(n-1) | seq | ts | digest(payload_n))`` with
``H`` and ``digest`` sha256 cut to 16 bytes, and the chain of seq 0 all zeros. It
covers the payload's bytes as stored (either encoding of ``ocb_events.codec``), not the
logical record: ``ocb_events.recode`` recomputes it when it re-encodes a log. A full
segment stored compressed (``ocb_events.blocks``) holds these same bytes, and
``map_file`` gives them back, so nothing here sees the difference. A
redacted frame keeps the digest of the payload it replaced, so redaction never breaks
the chain; anything else that changes a record changes every chain after it. The
chain of a record names the exact history up to it: snapshots and caches carry it and
are never used with a log whose chain at their seq differs.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import struct
import zlib
from array import array
from collections.abc import Sequence
from pathlib import Path

import msgspec

from ocb_events.blocks import Packed, is_packed
from ocb_events.codec import encode_record
from ocb_events.errors import LogCorrupt
from ocb_events.schema import Record

MORE = 1 << 31
REDACTED = 1 << 30
LOST = 1 << 29
LENGTH_MASK = LOST - 1
MAX_FRAME = LOST - 1
ZERO_CHAIN = bytes(16)
DIGEST_BYTES = 16

_LINK = struct.Struct("<16sQq")
HEAD = struct.Struct("<IIQq")
"""The start of every frame, the same in every format: crc, word, seq, ts."""


class Format(msgspec.Struct, frozen=True):
    """One segment format: its magic, header and frame layouts."""

    magic: bytes
    header: struct.Struct
    frame: struct.Struct
    chained: bool

    @property
    def header_size(self) -> int:
        return int(self.header.size)

    @property
    def frame_size(self) -> int:
        return int(self.frame.size)


V2 = Format(b"OCBSEG02", struct.Struct("<8sQ"), struct.Struct("<IIQq"), chained=False)
V3 = Format(b"OCBSEG03", struct.Struct("<8sQ16s"), struct.Struct("<IIQq16s"), chained=True)
FORMATS = {V2.magic: V2, V3.magic: V3}
CURRENT = V3
MAGIC = CURRENT.magic


def digest(payload: bytes | memoryview) -> bytes:
    """The content digest of a payload, as the chain uses it."""
    return hashlib.sha256(payload).digest()[:DIGEST_BYTES]


def link(prev: bytes, seq: int, ts: int, content: bytes) -> bytes:
    """The chain value of a record from the one before it and its content digest."""
    return hashlib.sha256(_LINK.pack(prev, seq, ts) + content).digest()[:DIGEST_BYTES]


def segment_header(first_seq: int, prev_chain: bytes) -> bytes:
    """The header of a new segment in the current format."""
    return CURRENT.header.pack(MAGIC, first_seq, prev_chain)


def encode_frame(
    seq: int, ts: int, payload: bytes, prev: bytes, *, more: bool = False, flags: int = 0
) -> tuple[bytes, bytes]:
    """The framed bytes of one record in the current format and its chain value.

    ``flags`` may hold ``REDACTED`` (then ``payload`` starts with the original digest)
    or ``LOST``.
    """
    content = payload[:DIGEST_BYTES] if flags & REDACTED else digest(payload)
    chain = link(prev, seq, ts, content)
    return pack_frame(seq, ts, chain, payload, flags | (MORE if more else 0)), chain


def pack_frame(seq: int, ts: int, chain: bytes, payload: bytes, flags: int) -> bytes:
    """A frame in the current format with the given chain value (not recomputed)."""
    body = struct.pack("<IQq16s", len(payload) | flags, seq, ts, chain) + payload
    return struct.pack("<I", zlib.crc32(body)) + body


class FrameInfo(msgspec.Struct, frozen=True):
    """The header of one frame found in a segment."""

    offset: int
    seq: int
    ts: int
    length: int
    flags: int
    chain: bytes
    header: int

    @property
    def end(self) -> int:
        return self.offset + self.header + self.length

    @property
    def more(self) -> bool:
        return bool(self.flags & MORE)


Buffer = bytes | bytearray | mmap.mmap


def frame_header(buf: Buffer, off: int, size: int, fmt: Format) -> FrameInfo | None:
    """The frame header at ``off`` when it fits (nothing is checked beyond that)."""
    if size - off < fmt.frame_size:
        return None
    fields = fmt.frame.unpack_from(buf, off)
    word, seq, ts = fields[1], fields[2], fields[3]
    chain = fields[4] if fmt.chained else b""
    mask = LENGTH_MASK if fmt.chained else ~MORE
    flags = word & (MORE | REDACTED | LOST) if fmt.chained else word & MORE
    return FrameInfo(off, seq, ts, word & mask, flags, chain, fmt.frame_size)


def crc_ok(buf: Buffer, info: FrameInfo) -> bool:
    """Whether the frame's crc holds (the frame must fit in ``buf``)."""
    stored = struct.unpack_from("<I", buf, info.offset)[0]
    with memoryview(buf)[info.offset + 4 : info.end] as body:
        return bool(zlib.crc32(body) == stored)


def frame_ok(buf: Buffer, off: int, size: int, fmt: Format) -> FrameInfo | None:
    """The frame at ``off`` if its header fits, its payload fits and its crc holds."""
    info = frame_header(buf, off, size, fmt)
    if info is None or info.length > MAX_FRAME or info.end > size or not crc_ok(buf, info):
        return None
    return info


def content_digest(buf: Buffer, info: FrameInfo) -> bytes:
    """The digest the chain takes for a frame: of its payload, or the stored original."""
    start = info.offset + info.header
    if info.flags & REDACTED:
        return bytes(buf[start : start + DIGEST_BYTES])
    with memoryview(buf)[start : info.end] as payload:
        return digest(payload)


def valid_frame_after(buf: Buffer, start: int, size: int, seq: int, fmt: Format) -> bool:
    """Whether a valid frame with a seq just after ``seq`` exists past ``start``.

    Looks for the packed seq values of the next few records and checks the frame
    each would belong to: finding one means the damage is in the middle of the log.
    """
    for k in range(1, 33):
        needle = struct.pack("<Q", seq + k)
        pos = buf.find(needle, start)
        while pos >= 0:
            head = pos - 8
            if head >= start and frame_ok(buf, head, size, fmt) is not None:
                return True
            pos = buf.find(needle, pos + 1)
    return False


class Scan(msgspec.Struct):
    """Where a scan of a segment ended: the end of its last complete batch, the last
    seq, ts and chain there, and where a torn tail starts (if any)."""

    end: int
    last_seq: int
    last_ts: int
    chain: bytes
    torn_at: int | None = None


def scan(
    buf: Buffer,
    start: int,
    size: int,
    *,
    first_expected: int,
    name: str,
    last_ts: int,
    chain: bytes,
    fmt: Format,
) -> Scan:
    """Walk frames from ``start`` (a batch boundary) to the end of the segment.

    A frame cut short by the end of the file, or a batch whose last frame is missing,
    is a torn tail: the scan ends at the last complete batch. A complete frame whose
    checksum fails is corruption, never a torn write (a killed writer leaves a prefix
    of what it wrote, never wrong bytes); so is garbage with valid records after it.

    Raises:
        LogCorrupt: naming the first damaged record.
    """
    off, expected = start, first_expected
    done = Scan(start, first_expected - 1, last_ts, chain)
    while off < size:
        info = frame_header(buf, off, size, fmt)
        sane = info is not None and info.seq == expected and info.length <= MAX_FRAME
        if info is None or not sane or info.end > size:
            if valid_frame_after(buf, off + 1, size, expected - 1, fmt):
                reason = "framing mismatch" if info is None or info.end > size else "bad header"
                if info is not None and info.seq != expected:
                    reason = f"seq {info.seq} where {expected} was expected"
                raise LogCorrupt(name, off, expected, reason)
            break
        if not crc_ok(buf, info):
            raise LogCorrupt(name, off, expected, "checksum mismatch in a complete record")
        expected += 1
        off = info.end
        if not info.more:
            done = Scan(off, info.seq, info.ts, info.chain)
    if done.end < size:
        done.torn_at = done.end
    return done


def scan_offsets(path: Path, first_seq: int, fmt: Format) -> array[int]:
    """The offset of every frame of a segment, in seq order, found by hopping from
    header to header (no objects per frame); the scan stops at the first frame whose
    seq breaks the sequence or whose length runs past the end."""
    out: array[int] = array("Q")
    buf, size = map_file(path)
    try:
        off, expected = fmt.header_size, first_seq
        unpack, head, add = struct.Struct("<IQ").unpack_from, fmt.frame_size, out.append
        mask = LENGTH_MASK if fmt.chained else ~MORE
        while size - off >= head:
            word, seq = unpack(buf, off + 4)
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


def map_file(path: Path, *, lenient: bool = False) -> tuple[mmap.mmap | bytes, int]:
    """A read-only map of a segment file and its size (empty bytes for an empty file);
    the segment's own bytes when it is stored compressed (``ocb_events.blocks``).

    Args:
        lenient: a damaged compressed block reads as zeros, a compressed segment
            whose table is damaged as empty (for salvage).

    Raises:
        LogCorrupt: a compressed block is damaged (unless ``lenient``).
    """
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return b"", 0
        if is_packed(fh.read(8)):
            try:
                data = Packed(path, fh).read(lenient=lenient)
            except LogCorrupt:
                if not lenient:
                    raise
                data = b""  # a damaged table: what the segment held is unknown
            return data, len(data)
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ), size


def read_header(buf: Buffer, size: int, name: str, first_seq: int) -> tuple[Format, bytes] | None:
    """The format of a segment and the chain before its first record (zeros for the
    old format); None when the file is shorter than any header.

    Raises:
        LogCorrupt: an unknown magic or a first seq that does not match the name.
    """
    if size < V2.header_size:
        return None
    fmt = FORMATS.get(bytes(buf[:8]))
    if fmt is None:
        raise LogCorrupt(name, 0, first_seq, "bad segment header")
    if size < fmt.header_size:
        return None
    fields = fmt.header.unpack_from(buf, 0)
    if fields[1] != first_seq:
        raise LogCorrupt(name, 0, first_seq, "bad segment header")
    return fmt, (fields[2] if fmt.chained else ZERO_CHAIN)


def frame_records(recs: Sequence[Record], prev: bytes) -> tuple[list[bytes], bytes]:
    """The frames of one batch of records (``MORE`` on all but the last) chained from
    ``prev``, and the chain after the last."""
    frames, chain, last = [], prev, len(recs) - 1
    for i, r in enumerate(recs):
        frame, chain = encode_frame(r.seq, r.ts, encode_record(r), chain, more=i < last)
        frames.append(frame)
    return frames, chain
