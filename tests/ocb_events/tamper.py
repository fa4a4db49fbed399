"""Editing records of a log on disk the way a forger would: one field of a frame changed
and its checksum fixed, a record's payload changed together with its own chain value,
or the whole history rewritten with a consistent chain and marks."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from pathlib import Path

from ocb_events.blocks import is_packed
from ocb_events.frames import (
    CURRENT,
    LENGTH_MASK,
    REDACTED,
    ZERO_CHAIN,
    content_digest,
    frame_header,
    link,
    scan_offsets,
)
from ocb_events.log import SegmentLog, frame_records
from ocb_events.marks import Tail, write_seals
from ocb_events.rewrite import seal_of
from ocb_events.schema import Record
from ocb_events.segments import list_segments, packed, segment_name

CHAIN_AT = 24
"""Where a frame holds its chain value: after crc, word, seq and ts."""
PAYLOAD_AT = CURRENT.frame_size

FIELDS = ("payload", "ts", "chain", "redacted", "seq")
"""The fields ``tamper`` changes (one at a time, the checksum fixed)."""


def store_plain(path: Path) -> None:
    """Store a compressed segment plain (its own bytes, as anyone can read them out):
    a forger edits those."""
    box = packed(path)
    if box is not None:
        path.write_bytes(box.read())


def frame_of(directory: Path, seq: int) -> tuple[Path, int, int]:
    """The segment holding record ``seq`` (stored plain first), and where its frame
    starts and ends (found by hopping from header to header, so an edited frame is
    found too)."""
    seg = next(s for s in reversed(list_segments(directory)) if s.first_seq <= seq)
    store_plain(seg.path)
    assert not is_packed(seg.path.read_bytes())
    off = scan_offsets(seg.path, seg.first_seq, CURRENT)[seq - seg.first_seq]
    word = struct.unpack_from("<I", seg.path.read_bytes(), off + 4)[0]
    return seg.path, off, off + PAYLOAD_AT + (word & LENGTH_MASK)


def edit_frame(directory: Path, seq: int, edit: Callable[[bytearray], None]) -> None:
    """Apply ``edit`` to the bytes of record ``seq``'s frame and fix its checksum."""
    path, off, end = frame_of(directory, seq)
    data = bytearray(path.read_bytes())
    frame = bytearray(data[off:end])
    edit(frame)
    frame[:4] = struct.pack("<I", zlib.crc32(bytes(frame[4:])))
    data[off:end] = frame
    path.write_bytes(bytes(data))


def stored_chain(directory: Path, seq: int) -> bytes:
    """The chain value stored in record ``seq``'s frame (all zeros for 0)."""
    if seq == 0:
        return ZERO_CHAIN
    path, off, _ = frame_of(directory, seq)
    return path.read_bytes()[off + CHAIN_AT : off + PAYLOAD_AT]


def tamper(directory: Path, seq: int, field: str, at: int = 0) -> None:
    """Change one field of record ``seq`` (one of ``FIELDS``; ``at`` picks the payload
    byte) and fix the checksum, leaving the chain value as it was."""

    def edit(frame: bytearray) -> None:
        if field == "payload":
            i = PAYLOAD_AT + at % (len(frame) - PAYLOAD_AT)
            frame[i] ^= 0x5A
        elif field == "ts":
            ts = struct.unpack_from("<q", frame, 16)[0]
            struct.pack_into("<q", frame, 16, ts + 1 + at % 1000)
        elif field == "chain":
            frame[CHAIN_AT + at % 16] ^= 0x33
        elif field == "redacted":
            word = struct.unpack_from("<I", frame, 4)[0]
            struct.pack_into("<I", frame, 4, word ^ REDACTED)
        elif field == "seq":
            struct.pack_into("<Q", frame, 8, seq + 1000 + at % 1000)
        else:
            raise ValueError(field)

    edit_frame(directory, seq, edit)


def replace_text(directory: Path, seq: int, old: bytes, new: bytes, *, rechain: bool) -> None:
    """Replace ``old`` by ``new`` (same length) in record ``seq``'s payload and fix its
    checksum; with ``rechain`` also its own chain value, from the one stored before it
    (the record then links; the next one no longer does)."""
    assert len(old) == len(new)
    prev = stored_chain(directory, seq - 1)

    def edit(frame: bytearray) -> None:
        payload = bytes(frame[PAYLOAD_AT:])
        assert old in payload, (old, payload[:200])
        frame[PAYLOAD_AT:] = payload.replace(old, new)
        if rechain:
            info = frame_header(bytes(frame), 0, len(frame), CURRENT)
            assert info is not None
            chain = link(prev, info.seq, info.ts, content_digest(bytes(frame), info))
            frame[CHAIN_AT:PAYLOAD_AT] = chain

    edit_frame(directory, seq, edit)


def rewrite_history(directory: Path, forge: Callable[[Record], Record]) -> None:
    """Rewrite every record through ``forge`` with a consistent chain, and the TAIL and
    seals to match: what a forger who knows the format does. Nothing in the log can
    show it; only a head kept elsewhere can."""
    with SegmentLog(directory, writer=False) as log:
        recs = [forge(r) for r in log.read()]
        firsts = [s.first_seq for s in log._segments]
    bounds = [*firsts[1:], len(recs) + 1]
    chain, seals, tail = ZERO_CHAIN, {}, None
    for first, end in zip(firsts, bounds, strict=True):
        path = directory / segment_name(first)
        frames, after = frame_records(recs[first - 1 : end - 1], chain)
        data = CURRENT.header.pack(CURRENT.magic, first, chain) + b"".join(frames)
        path.write_bytes(data)
        last = recs[end - 2]
        if end <= len(recs):
            seals[first] = seal_of(path, first, last.seq, last.ts, after)
        else:
            tail = Tail(first, len(data), last.seq, last.ts, after, zlib.crc32(data))
        chain = after
    write_seals(directory, seals)
    assert tail is not None
    (directory / "TAIL").write_bytes(tail.encode())
