"""Sealed segments stored compressed, in blocks that decompress one at a time.

NOTE: the layouts here are the storage format; change them only with a new magic.

A full segment (one the writer has sealed and never writes again) may be stored as a
container of its bytes: the same segment (header and frames, byte for byte) cut at
frame boundaries into blocks, each compressed on its own. Two containers exist; both
are read, and a segment is written in the second. ``OCBSEGZ1`` (blocks of about
``BLOCK_BYTES``)::

    file   MAGIC <Q first_seq> <I count> <B codec> <3x> <I dict length> <I dict crc32>
           table[count]  dictionary  blocks
    table  <Q first_seq> <Q offset> <I length> <I stored> <I crc32>

``first_seq`` is the seq of the block's first frame, ``offset`` and ``length`` where
its bytes sit in the segment, ``stored`` the size of its compressed bytes and ``crc32``
their checksum. ``OCBSEGZ2`` (blocks of about ``BLOCK_BYTES2``) stores each block in
two zstd frames, a LIGHT one (the block's bytes without the bodies of its query
traces, behind a table of where every payload sits in them) and a HEAVY one (those
bodies), ``ocb_events.bodies``; each with its own dictionary::

    file   MAGIC2 <Q first_seq> <I count> <B codec> <3x> <I light dict length>
           <I light dict crc32> <I heavy dict length> <I heavy dict crc32>
           <I table crc32>  table[count]  light dictionary  heavy dictionary  blocks
    table  <Q first_seq> <Q offset> <I length> <I frames> <I light> <I stored>
           <I light crc32> <I heavy crc32> <I crc32 of the light bytes' own table>
    block  light[light]  heavy[stored - light]

A rebuild decompresses only the light frames (a third of a block's bytes on a log of
traces) and takes every payload from its table, with no walk over the frames
(``ocb_events.segments.read_runs``); the analytics store reads both parts and takes
each body apart from its light payload (``read_body_runs``, ``Packed.parts``);
everything else reads a block whole, its heavy bytes put back.

A dictionary (none in a small segment) is trained on a segment's frames (the writer
trains a segment's on the segment before it, ahead of its seal: ``ocb_events.sealing``)
and stored in the container it compresses: node ids, paths and tags recur in every
block, and a block compressed with it shrinks about as much as one ten times its size,
while a read still decompresses one block (with the dictionary, read once per open).

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

import os
import struct
import sys
import weakref
import zlib
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import msgspec

from ocb_events.bodies import EMPTY_BIN, Parts, Table, split
from ocb_events.errors import LogCorrupt

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

MAGIC = b"OCBSEGZ1"
MAGIC2 = b"OCBSEGZ2"
MAGICS = (MAGIC, MAGIC2)
BLOCK_BYTES = 128 * 1024
"""Blocks of ``OCBSEGZ1`` are cut at the first frame boundary past this many bytes
of segment."""
BLOCK_BYTES2 = 512 * 1024
"""Blocks of ``OCBSEGZ2`` are cut at the first frame boundary past this many bytes
of segment (a rebuild takes a block's payloads at once: fewer, larger blocks cost
fewer steps, and a single record still decompresses in well under a millisecond)."""
DICT_BYTES = 110 * 1024
DICT_BYTES2 = 256 * 1024
"""The size of each of the two dictionaries of ``OCBSEGZ2``, trained on up to
``SAMPLES2`` frames or bodies: on a log of traces a segment then stores about 40%
fewer bytes than in ``OCBSEGZ1`` (dictionary included), while sealing it takes about
twice as long."""
SAMPLES2 = 2000
DICT_MIN = 1 << 20
"""A segment smaller than this is compressed without a dictionary."""
ZLIB, ZSTD = 1, 2
LEVEL = 9

_HEAD = struct.Struct("<8sQIB3xII")
_ENTRY = struct.Struct("<QQIII")
_HEAD2 = struct.Struct("<8sQIB3xIIIII")
_ENTRY2 = struct.Struct("<QQIIIIIII")


Dicts = tuple["zstd.ZstdDict | None", "zstd.ZstdDict | None"]
"""The dictionaries of an ``OCBSEGZ2`` container: its light part's and its heavy
part's (None: compressed without one)."""


class Block(msgspec.Struct, frozen=True):
    """One block of a compressed segment: where its bytes sit in the segment and in
    the file (``OCBSEGZ2``: its frame count, and how many of its stored bytes are
    light, with their checksums)."""

    first_seq: int
    offset: int
    length: int
    at: int
    stored: int
    crc: int
    frames: int = 0
    light: int = 0
    heavy_crc: int = 0
    table_crc: int = 0

    @property
    def end(self) -> int:
        return self.offset + self.length


def is_packed(head: bytes | bytearray | memoryview) -> bool:
    """Whether a file starting with ``head`` is a compressed segment (either
    container)."""
    return bytes(head[:8]) in MAGICS


def _cuts(first_seq: int, frames: Sequence[int], block_bytes: int) -> list[tuple[int, int, int]]:
    """Where blocks start: (seq, index of the first frame, segment offset), at the
    first frame boundary past ``block_bytes`` (the first block at offset 0)."""
    cuts = [(first_seq, 0, 0)]
    for k, off in enumerate(frames):
        if k and off - cuts[-1][2] >= block_bytes:
            cuts.append((first_seq + k, k, off))
    return cuts


def pack_z1(
    data: bytes, first_seq: int, frames: Sequence[int], *, block_bytes: int | None = None
) -> bytes:
    """The ``OCBSEGZ1`` container of a segment's bytes ``data`` whose frames start at
    ``frames`` (offsets, the first frame's seq ``first_seq``), in blocks of about
    ``block_bytes`` (default ``BLOCK_BYTES``). Only read now, written for tests."""
    size = block_bytes or BLOCK_BYTES
    cuts = [(seq, off) for seq, _, off in _cuts(first_seq, frames, size)]
    ends = [*frames[1:], len(data)]
    samples = [data[frames[k] : ends[k]] for k in _sampled(len(frames), 500)]
    zdict = _train(samples, len(data), DICT_BYTES)
    content = zdict.dict_content if zdict is not None else b""
    stored, table = [], []
    for i, (seq, off) in enumerate(cuts):
        end = cuts[i + 1][1] if i + 1 < len(cuts) else len(data)
        z = zstd.compress(data[off:end], LEVEL, zstd_dict=zdict)
        stored.append(z)
        table.append(_ENTRY.pack(seq, off, end - off, len(z), zlib.crc32(z)))
    head = _HEAD.pack(MAGIC, first_seq, len(cuts), ZSTD, len(content), zlib.crc32(content))
    return b"".join([head, *table, content, *stored])


def pack(
    data: bytes,
    first_seq: int,
    frames: Sequence[int],
    skips: Sequence[int],
    *,
    block_bytes: int | None = None,
    dicts: Dicts | None = None,
) -> bytes:
    """The ``OCBSEGZ2`` container of a segment's bytes ``data`` whose frames start at
    ``frames`` (offsets, the first frame's seq ``first_seq``) and their payloads
    ``skips`` bytes into them, in blocks of about ``block_bytes`` (default
    ``BLOCK_BYTES2``), compressed with ``dicts`` (by default, two dictionaries trained
    on this segment's light frames and bodies: ``train``).

    Raises:
        ValueError: a block's light and heavy parts do not give back its bytes (never
            expected: the segment is then left plain).
    """
    parts = split_blocks(data, first_seq, frames, skips, block_bytes=block_bytes)
    return assemble(parts, dicts if dicts is not None else train(samples(parts)))


class Split(msgspec.Struct):
    """A segment cut into blocks, each split into its light and heavy parts
    (``split_blocks``), ready to compress (``assemble``)."""

    data: bytes
    first_seq: int
    frames: int
    cuts: list[tuple[int, int, int]]
    blocks: list[tuple[int, int, int, Parts]]


class Samples(msgspec.Struct, frozen=True):
    """What two dictionaries are trained on: some light frames and bodies of a segment,
    and the total bytes of each kind."""

    light: list[bytes]
    heavy: list[bytes]
    light_bytes: int
    heavy_bytes: int


def split_blocks(
    data: bytes,
    first_seq: int,
    frames: Sequence[int],
    skips: Sequence[int],
    *,
    block_bytes: int | None = None,
) -> Split:
    """``data`` cut into blocks and each block split (``pack``)."""
    cuts = _cuts(first_seq, frames, block_bytes or BLOCK_BYTES2)
    blocks: list[tuple[int, int, int, Parts]] = []
    for i, (seq, k, off) in enumerate(cuts):
        stop = cuts[i + 1][1] if i + 1 < len(cuts) else len(frames)
        end = frames[stop] if stop < len(frames) else len(data)
        rel = [f - off for f in frames[k:stop]]
        blocks.append((seq, off, end, split(data[off:end], rel[0], rel, skips[k:stop])))
    return Split(data, first_seq, len(frames), cuts, blocks)


def samples(parts: Split) -> Samples:
    """About ``SAMPLES2`` light frames and ``SAMPLES2`` bodies of a split segment."""
    light = [p.light[a:b] for *_, p in parts.blocks for a, b in p.frames]
    heavy = [p.heavy[a:b] for *_, p in parts.blocks for a, b in p.pieces]
    return Samples(
        [light[k] for k in _sampled(len(light), SAMPLES2)],
        [heavy[k] for k in _sampled(len(heavy), SAMPLES2)],
        len(parts.data),
        sum(map(len, heavy)),
    )


def train(got: Samples) -> Dicts:
    """The two dictionaries trained on ``got`` (None for a kind with too little)."""
    return (
        _train(got.light, got.light_bytes, DICT_BYTES2),
        _train(got.heavy, got.heavy_bytes, DICT_BYTES2),
    )


def assemble(parts: Split, dicts: Dicts) -> bytes:
    """The ``OCBSEGZ2`` container of a split segment, compressed with ``dicts``.

    Raises:
        ValueError: a block's parts do not give back its bytes."""
    ldict, hdict = dicts
    data, first_seq, cuts = parts.data, parts.first_seq, parts.cuts
    stored: list[bytes] = []
    table: list[bytes] = []
    for i, (seq, off, end, block) in enumerate(parts.blocks):
        zl = zstd.compress(block.light, LEVEL, zstd_dict=ldict)
        zh = zstd.compress(block.heavy, LEVEL, zstd_dict=hdict) if block.heavy else b""
        stop = cuts[i + 1][1] if i + 1 < len(cuts) else parts.frames
        back = Table(block.light)
        if back.splice(block.light, block.heavy) != data[off:end]:
            raise ValueError(f"block {i} of segment {first_seq} does not split back whole")
        tcrc = zlib.crc32(block.light[: back.size])
        entry = (seq, off, end - off, stop - cuts[i][1], len(zl), len(zl) + len(zh))
        table.append(_ENTRY2.pack(*entry, zlib.crc32(zl), zlib.crc32(zh), tcrc))
        stored += (zl, zh)
    lc = ldict.dict_content if ldict is not None else b""
    hc = hdict.dict_content if hdict is not None else b""
    entries = b"".join(table)
    head = _HEAD2.pack(
        MAGIC2, first_seq, len(parts.blocks), ZSTD, len(lc), zlib.crc32(lc), len(hc),
        zlib.crc32(hc), zlib.crc32(entries),
    )  # fmt: skip
    return b"".join([head, entries, lc, hc, *stored])


def _sampled(n: int, most: int) -> range:
    """Which of ``n`` frames a dictionary is trained on: about ``most`` of them."""
    return range(0, n, max(1, n // most))


def _train(samples: list[bytes], total: int, size: int) -> zstd.ZstdDict | None:
    """A dictionary of ``size`` bytes trained on ``samples`` of a segment of ``total``
    bytes (None for a small one)."""
    if total < DICT_MIN or len(samples) < 64:
        return None
    try:
        return zstd.train_dict(samples, size)
    except zstd.ZstdError:
        return None


class _At:
    """Reads a file from the start, by position (never moving the offset it shares
    with the descriptors it was duplicated from or to)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.at = fd, 0

    def read(self, n: int) -> bytes:
        data = os.pread(self.fd, n, self.at)
        self.at += len(data)
        return data


class Packed:
    """A compressed segment file (either container), its block table read once.

    Every read goes to the file it was opened from (``fd``: the open file ``fh`` when
    given, else ``path`` opened once), even after ``path`` names another file: a
    segment rewritten in place (compressed, redacted, repaired) is renamed over the old
    one, whose blocks this table describes.

    Raises:
        LogCorrupt: the container's header or table is damaged.
    """

    def __init__(self, path: Path, fh: BinaryIO | None = None) -> None:
        self.path = path
        self.name = path.name
        self.fd = os.dup(fh.fileno()) if fh is not None else os.open(path, os.O_RDONLY)
        weakref.finalize(self, os.close, self.fd)
        self.v2 = os.pread(self.fd, 8, 0) == MAGIC2
        blocks = self._read_v2(_At(self.fd)) if self.v2 else self._read_v1(_At(self.fd))
        self.blocks: list[Block] = blocks
        self.size = blocks[-1].end if blocks else 0
        self.firsts = array("Q", (b.first_seq for b in blocks))

    def _bad(self, why: str, seq: int = -1) -> LogCorrupt:
        return LogCorrupt(self.name, 0, seq, why)

    def _read_v1(self, fh: _At) -> list[Block]:
        head = fh.read(_HEAD.size)
        if len(head) < _HEAD.size or head[:8] != MAGIC:
            raise self._bad("bad compressed segment header")
        _, self.first_seq, count, self.codec, dict_len, dict_crc = _HEAD.unpack(head)
        raw = fh.read(_ENTRY.size * count)
        content = fh.read(dict_len)
        bad = len(raw) != _ENTRY.size * count or self.codec not in (ZLIB, ZSTD)
        if bad or len(content) != dict_len or zlib.crc32(content) != dict_crc:
            raise self._bad("bad compressed segment table", self.first_seq)
        self.zdict = zstd.ZstdDict(content) if content else None
        self.hdict: zstd.ZstdDict | None = None
        blocks, at = [], _HEAD.size + len(raw) + dict_len
        for seq, off, length, stored, crc in _ENTRY.iter_unpack(raw):
            blocks.append(Block(seq, off, length, at, stored, crc))
            at += stored
        return blocks

    def _read_v2(self, fh: _At) -> list[Block]:
        head = fh.read(_HEAD2.size)
        if len(head) < _HEAD2.size or head[:8] != MAGIC2:
            raise self._bad("bad compressed segment header")
        _, self.first_seq, count, self.codec, llen, lcrc, hlen, hcrc, tcrc = _HEAD2.unpack(head)
        raw = fh.read(_ENTRY2.size * count)
        lc, hc = fh.read(llen), fh.read(hlen)
        bad = len(raw) != _ENTRY2.size * count or self.codec != ZSTD or zlib.crc32(raw) != tcrc
        if bad or (len(lc), len(hc), zlib.crc32(lc), zlib.crc32(hc)) != (llen, hlen, lcrc, hcrc):
            raise self._bad("bad compressed segment table", self.first_seq)
        self.zdict = zstd.ZstdDict(lc) if lc else None
        self.hdict = zstd.ZstdDict(hc) if hc else None
        blocks, at = [], _HEAD2.size + len(raw) + llen + hlen
        for seq, off, length, *rest in _ENTRY2.iter_unpack(raw):
            frames, light, stored, crc, heavy_crc, table_crc = rest
            blocks.append(
                Block(seq, off, length, at, stored, crc, frames, light, heavy_crc, table_crc)
            )
            at += stored
        for a, b in zip(blocks, blocks[1:], strict=False):
            if a.first_seq + a.frames != b.first_seq or a.end != b.offset:
                raise self._bad("bad compressed segment table", self.first_seq)
        return blocks

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
        for b in self.blocks[first : last + 1]:
            try:
                out.append(self.block(b, self.stored(b)))
            except LogCorrupt:
                if not lenient:
                    raise
                out.append(bytes(b.length))
        return b"".join(out)

    def stored(self, b: Block, *, light: bool = False) -> bytes:
        """The stored bytes of block ``b`` (``light``: its light part alone)."""
        return os.pread(self.fd, b.light if light else b.stored, b.at)

    def _corrupt(self, b: Block, why: str) -> LogCorrupt:
        return LogCorrupt(self.name, b.offset, b.first_seq, f"{why} (compressed block)")

    def _unzip(self, b: Block, z: bytes, zdict: zstd.ZstdDict | None, what: str) -> bytes:
        try:
            if self.codec == ZSTD:
                return zstd.decompress(z, zstd_dict=zdict) if z else b""
            return zlib.decompress(z)
        except (zstd.ZstdError, zlib.error) as exc:
            raise self._corrupt(b, f"undecodable {what}bytes") from exc

    def block(self, b: Block, z: bytes) -> bytes:
        """The segment's bytes of block ``b``, from its stored bytes ``z``.

        Raises:
            LogCorrupt: ``z`` fails the block's checksum or does not decompress to it.
        """
        if len(z) != b.stored:
            raise self._corrupt(b, "checksum mismatch")
        if not self.v2:
            if zlib.crc32(z) != b.crc:
                raise self._corrupt(b, "checksum mismatch")
            data = self._unzip(b, z, self.zdict, "")
        else:
            light, table = self.light(b, z[: b.light])
            if zlib.crc32(z[b.light :]) != b.heavy_crc:
                raise self._corrupt(b, "checksum mismatch in the heavy part")
            heavy = self._unzip(b, z[b.light :], self.hdict, "heavy ")
            try:
                data = table.splice(light, heavy)
            except ValueError as exc:
                raise self._corrupt(b, f"damaged heavy part: {exc}") from exc
        if len(data) != b.length:
            raise self._corrupt(b, "wrong length")
        return data

    def parts(self, b: Block) -> tuple[bytes, Table, bytes]:
        """The light bytes of block ``b`` of an ``OCBSEGZ2`` container with their
        table, and its heavy bytes (the bins taken out, in order), each checked
        against its checksum, not spliced: ``Table.bins`` gives each frame its bin.

        Raises:
            LogCorrupt: either part is damaged or they do not fit the table.
        """
        z = self.stored(b)
        if len(z) != b.stored:
            raise self._corrupt(b, "checksum mismatch")
        light, table = self.light(b, z[: b.light])
        if zlib.crc32(z[b.light :]) != b.heavy_crc:
            raise self._corrupt(b, "checksum mismatch in the heavy part")
        heavy = self._unzip(b, z[b.light :], self.hdict, "heavy ")
        if int(table.piece.sum()) != len(heavy):
            raise self._corrupt(b, "damaged heavy part: bin lengths do not add up")
        if b.length != len(light) - table.size + len(heavy) - len(EMPTY_BIN) * len(table.cut):
            raise self._corrupt(b, "wrong length")
        return light, table, heavy

    def head(self) -> bytes:
        """The first bytes of the segment, its header whole (in an ``OCBSEGZ2``
        container, the bytes before its first frame, from its first block's light
        part alone).

        Raises:
            LogCorrupt: that block is damaged.
        """
        if not self.blocks:
            return b""
        b = self.blocks[0]
        if not self.v2:
            return self.block(b, self.stored(b))
        light, table = self.light(b, self.stored(b, light=True))
        return light[table.size : table.size + table.start]

    def light(self, b: Block, z: bytes) -> tuple[bytes, Table]:
        """The light bytes of block ``b`` of an ``OCBSEGZ2`` container (its table
        first) from its stored light bytes ``z``, and that table.

        Raises:
            LogCorrupt: ``z`` fails its checksum, does not decompress, or its table is
                damaged or does not fit the block.
        """
        if len(z) != b.light or zlib.crc32(z) != b.crc:
            raise self._corrupt(b, "checksum mismatch in the light part")
        light = self._unzip(b, z, self.zdict, "light ")
        try:
            table = Table(light)
        except ValueError as exc:
            raise self._corrupt(b, f"damaged table: {exc}") from exc
        if len(table.lengths) != b.frames or zlib.crc32(light[: table.size]) != b.table_crc:
            raise self._corrupt(b, "damaged table: checksum mismatch")
        return light, table
