"""Trace bodies taken out of a block of a segment and put back: the light and heavy
parts of a block of a compressed segment (``OCBSEGZ2``, ``ocb_events.blocks``).

NOTE: the layout here is the storage format; change it only with a new magic.

A compact trace record (``ocb_events.codec``) ends with its body: the key ``z`` and
a msgpack bin holding the packed seeds, steps and fired ids, which no fold reads. A
block's LIGHT bytes are its segment bytes with each such bin (header and body)
replaced by an empty bin (``c4 00``), so a light payload is still a record, which
decodes to the same map but for an empty ``z``; its HEAVY bytes are the bins taken
out, in order. A table in front of the light bytes says where every frame's payload
sits in them and which frames gave up their bin::

    light   <I frames> <I cuts> <I start> lengths[frames] skips[frames]
            cut[cuts] piece[cuts]  light bytes
    lengths u32: each frame's length in the light bytes (from ``start``, where the
            first frame starts: after the segment header in a segment's first block)
    skips   u8: where the frame's payload starts in it (past a redacted frame's digest)
    cut     u32: the index of each frame whose bin went to the heavy bytes
    piece   u32: the length of that bin

A bin is taken out only when the light payload provably reads the same to a fold:
decoded, it equals the whole payload's map with ``z`` empty, and the fold decoder
reads it. So the light bytes serve every reader that decodes with the fold decoder (a
rebuild) without a walk over the frames or the bodies' bytes, and the heavy bytes put
back give the segment's own bytes, exactly.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, overload

import msgspec
import numpy as np

from ocb_events.schema import FoldRecord

EMPTY_BIN = b"\xc4\x00"
_KEY = b"\xa1z"
_COUNTS = struct.Struct("<III")
_TRACE = 0x85
"""The first byte of a compact trace record (``ocb_events.codec.PACKED_TRACE``)."""


class _Body(msgspec.Struct):
    z: bytes


_BODY = msgspec.msgpack.Decoder(_Body)
_ANY = msgspec.msgpack.Decoder()
_FOLD = msgspec.msgpack.Decoder(FoldRecord)


def _bin_headers(n: int) -> list[bytes]:
    """Every msgpack bin header of length ``n`` (the shortest first)."""
    heads = [b"\xc6" + n.to_bytes(4, "big")]
    if n < 1 << 16:
        heads.insert(0, b"\xc5" + n.to_bytes(2, "big"))
    if n < 1 << 8:
        heads.insert(0, bytes((0xC4, n)))
    return heads


def body_at(payload: bytes) -> int | None:
    """Where the bin of a compact trace's body starts in ``payload`` (its last value,
    under the key ``z``), when taking it out leaves a record a fold reads the same;
    None otherwise (the payload then stays whole in the light bytes)."""
    if not payload or payload[0] != _TRACE:
        return None
    try:
        z = _BODY.decode(payload).z
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    for head in _bin_headers(len(z)):
        at = len(payload) - len(z) - len(head)
        if at < 3 or payload[at - 2 : at] != _KEY or payload[at : at + len(head)] != head:
            continue
        light = payload[:at] + EMPTY_BIN
        try:
            whole, cut = _ANY.decode(payload), _ANY.decode(light)
            _FOLD.decode(light)
        except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
            return None
        if isinstance(whole, dict) and whole.get("z") == z and {**whole, "z": b""} == cut:
            return at
    return None


class Parts(msgspec.Struct):
    """A block split: its light bytes (table first), its heavy bytes, and the spans of
    its light frames and of its bins (for training dictionaries)."""

    light: bytes
    heavy: bytes
    frames: list[tuple[int, int]]
    pieces: list[tuple[int, int]]


def split(data: bytes, start: int, frames: Sequence[int], skips: Sequence[int]) -> Parts:
    """The light and heavy parts of a block's segment bytes ``data``, whose frames
    start at ``frames`` (offsets in ``data``, the first at ``start``) and their
    payloads ``skips`` bytes into them."""
    ends = [*frames[1:], len(data)]
    light, heavy, lengths, cuts, pieces = [data[:start]], [], [], [], []
    spans, bins, at, hat = [], [], start, 0
    for k, (off, end) in enumerate(zip(frames, ends, strict=True)):
        cut = body_at(data[off + skips[k] : end])
        if cut is None:
            light.append(data[off:end])
            size = end - off
        else:
            cut += off + skips[k]
            light += (data[off:cut], EMPTY_BIN)
            heavy.append(data[cut:end])
            cuts.append(k)
            pieces.append(end - cut)
            bins.append((hat, hat + end - cut))
            hat += end - cut
            size = cut - off + len(EMPTY_BIN)
        lengths.append(size)
        spans.append((at, at + size))
        at += size
    table = b"".join(
        [
            _COUNTS.pack(len(frames), len(cuts), start),
            np.asarray(lengths, "<u4").tobytes(),
            np.asarray(skips, "u1").tobytes(),
            np.asarray(cuts, "<u4").tobytes(),
            np.asarray(pieces, "<u4").tobytes(),
        ]
    )
    shift = len(table)
    return Parts(
        table + b"".join(light),
        b"".join(heavy),
        [(a + shift, b + shift) for a, b in spans],
        bins,
    )


class Table:
    """The table in front of a block's light bytes, checked against them.

    Raises:
        ValueError: the table does not fit the light bytes.
    """

    __slots__ = ("cut", "ends", "lengths", "piece", "size", "skips", "start")

    def __init__(self, light: bytes) -> None:
        if len(light) < _COUNTS.size:
            raise ValueError("no table")
        n, m, start = _COUNTS.unpack_from(light)
        size = _COUNTS.size + 5 * n + 8 * m
        if size > len(light):
            raise ValueError("table runs past the light bytes")
        at = _COUNTS.size
        lengths = np.frombuffer(light, "<u4", n, at).astype(np.int64)
        skips = np.frombuffer(light, "u1", n, at + 4 * n).astype(np.int64)
        cut = np.frombuffer(light, "<u4", m, at + 5 * n).astype(np.int64)
        piece = np.frombuffer(light, "<u4", m, at + 5 * n + 4 * m).astype(np.int64)
        ends = size + start + np.cumsum(lengths)
        if (ends[-1] if n else size + start) != len(light):
            raise ValueError("frame lengths do not add up to the light bytes")
        if n and bool((skips > lengths).any()):
            raise ValueError("a payload starts past its frame")
        if m and (int(cut[-1]) >= n or (m > 1 and bool((np.diff(cut) <= 0).any()))):
            raise ValueError("bad cut frames")
        if m and bool((lengths[cut] < skips[cut] + len(EMPTY_BIN)).any()):
            raise ValueError("a cut frame too short for its placeholder")
        self.size, self.start = size, start
        self.lengths, self.skips, self.cut, self.piece, self.ends = lengths, skips, cut, piece, ends

    def splice(self, light: bytes, heavy: bytes) -> bytes:
        """The block's segment bytes: ``light`` (past the table) with every bin of
        ``heavy`` put back in place of its placeholder.

        Raises:
            ValueError: the heavy bytes or a placeholder do not fit the table.
        """
        if int(self.piece.sum()) != len(heavy):
            raise ValueError("bin lengths do not add up to the heavy bytes")
        marks = self.ends[self.cut].tolist()
        hends = np.cumsum(self.piece).tolist()
        out: list[Any] = []
        prev, hat = self.size, 0
        for mark, hend in zip(marks, hends, strict=True):
            if light[mark - 2 : mark] != EMPTY_BIN:
                raise ValueError("a placeholder is not an empty bin")
            out += (light[prev : mark - 2], heavy[hat:hend])
            prev, hat = mark, hend
        out.append(light[prev:])
        return b"".join(out)

    def payloads(
        self, light: memoryview, base: int, lo: int, hi: int
    ) -> tuple[list[memoryview], FrameOffsets]:
        """The light payloads of frames ``lo..hi-1`` (views of ``light``) and the
        frames' offsets in the segment (the block starting at segment offset ``base``;
        found when asked: a rebuild names one only in an error)."""
        ends = self.ends[lo:hi]
        firsts = (ends - self.lengths[lo:hi] + self.skips[lo:hi]).tolist()
        views = [light[s:e] for s, e in zip(firsts, ends.tolist(), strict=True)]
        return views, FrameOffsets(self, base, lo, hi)

    def offsets(self, base: int, lo: int, hi: int) -> list[int]:
        """The segment offsets of frames ``lo..hi-1`` (the block starting at segment
        offset ``base``), all at once (``FrameOffsets`` reads them one at a time)."""
        grown = np.zeros(len(self.lengths) + 1, dtype=np.int64)
        grown[self.cut + 1] = self.piece - len(EMPTY_BIN)
        grown = np.cumsum(grown)[lo:hi]
        starts = self.ends[lo:hi] - self.lengths[lo:hi]
        got: list[int] = (starts + grown + (base - self.size)).tolist()
        return got

    def bins(self, light: bytes, heavy: memoryview, lo: int, hi: int) -> list[Any]:
        """For each frame ``lo..hi-1``, the bin it gave up (header and body, a view of
        ``heavy``, its placeholder checked in ``light``), or None for a frame left
        whole.

        Raises:
            ValueError: a placeholder is not an empty bin.
        """
        out: list[Any] = [None] * (hi - lo)
        k0, k1 = (int(k) for k in np.searchsorted(self.cut, (lo, hi)))
        if k0 == k1:
            return out
        hends = np.cumsum(self.piece)
        cut, marks = self.cut[k0:k1], self.ends[self.cut[k0:k1]]
        starts, ends = (hends - self.piece)[k0:k1].tolist(), hends[k0:k1].tolist()
        for k, mark, s, e in zip((cut - lo).tolist(), marks.tolist(), starts, ends, strict=True):
            if light[mark - 2 : mark] != EMPTY_BIN:
                raise ValueError("a placeholder is not an empty bin")
            out[k] = heavy[s:e]
        return out


class FrameOffsets(Sequence[int]):
    """The segment offsets of frames ``lo..hi-1`` of a block (``Table.payloads``): a
    frame's light start, moved by the bodies taken out of the frames before it."""

    __slots__ = ("_base", "_hi", "_lo", "_table")

    def __init__(self, table: Table, base: int, lo: int, hi: int) -> None:
        self._table, self._base, self._lo, self._hi = table, base, lo, hi

    def __len__(self) -> int:
        return self._hi - self._lo

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> list[int]: ...
    def __getitem__(self, i: int | slice) -> int | list[int]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError("frame index out of range")
        k = self._lo + (i % len(self))
        return self._table.offsets(self._base, k, k + 1)[0]
