"""What a log directory knows about its own end: the TAIL checkpoint and the SEALS of
its full segments. Both are written by the writer only.

NOTE: the TAIL layout is part of the storage format.

``TAIL`` (overwritten in place after every commit, and when a segment is started)::

    b"OCBTAIL3" <Q first_seq of the last segment> <Q end offset> <Q last_seq> <q last_ts>
    <16s chain of last_seq> <I crc32 of the segment's bytes before the end offset> <I crc>

It says what the log held when it was written: a log that holds less has lost
records, and a segment whose bytes before the end offset no longer give the same crc
was changed (damage in acknowledged records). A TAIL that fails its own crc is
ignored. The ``OCBSEG02`` format's 36-byte TAIL is ignored too (such logs are scanned).

``SEALS`` (with a crc32 of its own) lists every full segment with its seq range, chain,
last ts and the (size, mtime, inode) it had when it was last verified end to end. A
segment whose stat still matches is trusted on open; any other is verified again, so
damage done to a sealed segment by anything but this log stops every command.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import msgspec

from ocb_events.durable import fsync_dir, open_private, replace_file

TAIL_MAGIC = b"OCBTAIL3"
_TAIL = struct.Struct("<8sQQQq16sI")
TAIL_SIZE = _TAIL.size + 4


class Tail(msgspec.Struct, frozen=True):
    """A decoded TAIL checkpoint."""

    first_seq: int
    offset: int
    last_seq: int
    last_ts: int
    chain: bytes
    prefix_crc: int

    def encode(self) -> bytes:
        body = _TAIL.pack(
            TAIL_MAGIC,
            self.first_seq,
            self.offset,
            self.last_seq,
            self.last_ts,
            self.chain,
            self.prefix_crc,
        )
        return body + struct.pack("<I", zlib.crc32(body))


def read_tail(directory: Path) -> Tail | None:
    """The TAIL checkpoint, or None when it is missing, damaged or of the old format."""
    try:
        raw = (directory / "TAIL").read_bytes()
    except OSError:
        return None
    if len(raw) != TAIL_SIZE or raw[:8] != TAIL_MAGIC:
        return None
    body, (crc,) = raw[:-4], struct.unpack("<I", raw[-4:])
    if zlib.crc32(body) != crc:
        return None
    _, first, offset, last_seq, last_ts, chain, prefix = _TAIL.unpack(body)
    return Tail(first, offset, last_seq, last_ts, chain, prefix)


class TailWriter:
    """Overwrites the TAIL in place (a torn write fails the crc and is ignored)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "TAIL"
        self._fd: int | None = None

    def write(self, tail: Tail) -> None:
        if self._fd is None:
            self._fd = open_private(self.path, os.O_WRONLY | os.O_CREAT)
            os.ftruncate(self._fd, TAIL_SIZE)
        os.pwrite(self._fd, tail.encode(), 0)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def replace_tail(directory: Path, tail: Tail | None) -> None:
    """Replace the TAIL durably by a rewrite of the segment it covers: ``None`` removes
    it (before the segment is renamed into place, so a crash between the two never
    leaves a TAIL describing other bytes; a log without one is scanned), a Tail puts the
    new one in place (after the rename).

    Raises:
        OSError: the disk refused the write.
    """
    path = directory / "TAIL"
    if tail is None:
        path.unlink(missing_ok=True)
    else:
        replace_file(path, [tail.encode()], directory / "TAIL.tmp")
    fsync_dir(directory)


class Seal(msgspec.Struct, frozen=True, array_like=True):
    """A full segment as it was when last verified."""

    first_seq: int
    last_seq: int
    last_ts: int
    chain: bytes
    size: int
    mtime_ns: int
    inode: int

    def matches(self, st: os.stat_result) -> bool:
        return (self.size, self.mtime_ns, self.inode) == (st.st_size, st.st_mtime_ns, st.st_ino)


_SEALS_ENCODER = msgspec.msgpack.Encoder()
_SEALS_DECODER = msgspec.msgpack.Decoder(list[Seal])


def read_seals(directory: Path) -> dict[int, Seal]:
    """Seals by first seq (empty when the file is missing, damaged or unreadable: every
    full segment is then verified again)."""
    try:
        raw = (directory / "SEALS").read_bytes()
    except OSError:
        return {}
    body, crc = raw[:-4], raw[-4:]
    if len(raw) < 4 or struct.pack("<I", zlib.crc32(body)) != crc:
        return {}
    try:
        return {s.first_seq: s for s in _SEALS_DECODER.decode(body)}
    except (msgspec.DecodeError, msgspec.ValidationError):
        return {}


def write_seals(directory: Path, seals: dict[int, Seal]) -> None:
    """Replace the SEALS file (temp file, fsync, rename)."""
    body = _SEALS_ENCODER.encode([seals[k] for k in sorted(seals)])
    data = body + struct.pack("<I", zlib.crc32(body))
    replace_file(directory / "SEALS", [data], directory / "SEALS.tmp")
