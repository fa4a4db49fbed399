"""Sealed segments stored compressed, in blocks that decompress one at a time.

NOTE: the layout here is the storage format; change it only with a new magic.

A full segment (one the writer has sealed and never writes again) may be stored as a
container of its bytes: the same segment (header and frames, byte for byte) cut at
frame boundaries into blocks of about ``BLOCK_BYTES``, each compressed on its own::

    file   MAGIC <Q first_seq> <I count> <B codec> <3x> <I dict length> <I dict crc32>
           table[count]  dictionary  blocks
    table  <Q first_seq> <Q offset> <I length> <I stored> <I crc32>

``first_seq`` is the seq of the block's first frame, ``offset`` and ``length`` where
its bytes sit in the segment, ``stored`` the size of its compressed bytes and ``crc32``
their checksum. The dictionary (none in a small segment) is trained on the segment's
own frames when it is stored: node ids, paths and tags recur in every block, and a
block compressed with it shrinks about as much as one ten times its size, while a
read still decompresses one block (with the dictionary, read once per open).

Everything above the container (frames, checksums, the hash chain, offsets named in
errors, the index of a segment) sees the segment's own bytes, so the hash chain covers
the same payloads whether a segment is stored plain or compressed, and a segment
compresses or decompresses without changing any chain, seal content, snapshot or
cache. Reading one record decompresses the block that holds it.

The codec is zstd (``compression.zstd`` from Python 3.14, ``backports.zstd`` before):
it decompresses about twice as fast as zlib at a better ratio, and replay reads every
block. zlib (codec 1) is read too.
"""

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from collections.abc import Sequence
from pathlib import Path

import msgspec

from ocb_events.errors import LogCorrupt

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

MAGIC = b"OCBSEGZ1"
BLOCK_BYTES = 128 * 1024
"""Blocks are cut at the first frame boundary past this many bytes of segment."""
DICT_BYTES = 110 * 1024
DICT_MIN = 1 << 20
"""A segment smaller than this is compressed without a dictionary."""
ZLIB, ZSTD = 1, 2
LEVEL = 9

_HEAD = struct.Struct("<8sQIB3xII")
_ENTRY = struct.Struct("<QQIII")


class Block(msgspec.Struct, frozen=True):
    """One block of a compressed segment: where its bytes sit in the segment and in
    the file."""

    first_seq: int
    offset: int
    length: int
    at: int
    stored: int
    crc: int

    @property
    def end(self) -> int:
        return self.offset + self.length


def is_packed(head: bytes | bytearray | memoryview) -> bool:
    """Whether a file starting with ``head`` is a compressed segment."""
    return bytes(head[:8]) == MAGIC


def pack(data: bytes, first_seq: int, frames: Sequence[int]) -> bytes:
    """The compressed container of a segment's bytes ``data`` whose frames start at
    ``frames`` (offsets, the first frame's seq ``first_seq``)."""
    cuts: list[tuple[int, int]] = [(first_seq, 0)]
    for k, off in enumerate(frames):
        if off - cuts[-1][1] >= BLOCK_BYTES:
            cuts.append((first_seq + k, off))
    zdict = _train(data, frames)
    content = zdict.dict_content if zdict is not None else b""
    stored, table = [], []
    for i, (seq, off) in enumerate(cuts):
        end = cuts[i + 1][1] if i + 1 < len(cuts) else len(data)
        z = zstd.compress(data[off:end], LEVEL, zstd_dict=zdict)
        stored.append(z)
        table.append(_ENTRY.pack(seq, off, end - off, len(z), zlib.crc32(z)))
    head = _HEAD.pack(MAGIC, first_seq, len(cuts), ZSTD, len(content), zlib.crc32(content))
    return b"".join([head, *table, content, *stored])


def _train(data: bytes, frames: Sequence[int]) -> zstd.ZstdDict | None:
    """A dictionary trained on a sample of a segment's frames (None for a small one)."""
    if len(data) < DICT_MIN or len(frames) < 64:
        return None
    step = max(1, len(frames) // 500)  # more samples train slower, no better
    ends = [*frames[1:], len(data)]
    samples = [data[frames[k] : ends[k]] for k in range(0, len(frames), step)]
    try:
        return zstd.train_dict(samples, DICT_BYTES)
    except zstd.ZstdError:
        return None


class Packed:
    """A compressed segment file, its block table read once.

    Raises:
        LogCorrupt: the container's header or table is damaged.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.name
        with open(path, "rb") as fh:
            head = fh.read(_HEAD.size)
            if len(head) < _HEAD.size or not is_packed(head):
                raise LogCorrupt(self.name, 0, -1, "bad compressed segment header")
            _, self.first_seq, count, self.codec, dict_len, dict_crc = _HEAD.unpack(head)
            raw = fh.read(_ENTRY.size * count)
            content = fh.read(dict_len)
        bad = len(raw) != _ENTRY.size * count or self.codec not in (ZLIB, ZSTD)
        if bad or len(content) != dict_len or zlib.crc32(content) != dict_crc:
            raise LogCorrupt(self.name, 0, self.first_seq, "bad compressed segment table")
        self.zdict = zstd.ZstdDict(content) if content else None
        blocks, at = [], _HEAD.size + len(raw) + dict_len
        for seq, off, length, stored, crc in _ENTRY.iter_unpack(raw):
            blocks.append(Block(seq, off, length, at, stored, crc))
            at += stored
        self.blocks: list[Block] = blocks
        self.size = blocks[-1].end if blocks else 0
        self.firsts = array("Q", (b.first_seq for b in blocks))

    def block_of_seq(self, seq: int) -> int:
        """The index of the block holding record ``seq`` (the last block whose first
        seq is at most ``seq``)."""
        lo, hi = 0, len(self.firsts)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.firsts[mid] <= seq:
                lo = mid
            else:
                hi = mid
        return lo

    def block_of_offset(self, off: int) -> int:
        """The index of the block holding segment byte ``off``."""
        for i, b in enumerate(self.blocks):
            if b.offset <= off < b.end:
                return i
        return len(self.blocks) - 1

    def read(self, first: int = 0, last: int | None = None, *, lenient: bool = False) -> bytes:
        """The segment's bytes of blocks ``first..last`` (inclusive; default: to the
        end), from the segment offset of block ``first``.

        Args:
            lenient: a damaged block reads as zeros of its length (for salvage),
                instead of raising.

        Raises:
            LogCorrupt: a block whose checksum fails or that does not decompress,
                naming the segment, the block's offset in the segment and its first seq.
        """
        last = len(self.blocks) - 1 if last is None else last
        out = []
        with open(self.path, "rb") as fh:
            for b in self.blocks[first : last + 1]:
                fh.seek(b.at)
                try:
                    out.append(self.block(b, fh.read(b.stored)))
                except LogCorrupt:
                    if not lenient:
                        raise
                    out.append(bytes(b.length))
        return b"".join(out)

    def block(self, b: Block, z: bytes) -> bytes:
        """The segment's bytes of block ``b``, from its stored bytes ``z``.

        Raises:
            LogCorrupt: ``z`` fails the block's checksum or does not decompress to it.
        """

        def bad(why: str) -> LogCorrupt:
            return LogCorrupt(self.name, b.offset, b.first_seq, f"{why} (compressed block)")

        if len(z) != b.stored or zlib.crc32(z) != b.crc:
            raise bad("checksum mismatch")
        try:
            if self.codec == ZSTD:
                data = zstd.decompress(z, zstd_dict=self.zdict)
            else:
                data = zlib.decompress(z)
        except (zstd.ZstdError, zlib.error) as exc:
            raise bad("undecodable bytes") from exc
        if len(data) != b.length:
            raise bad("wrong length")
        return data
