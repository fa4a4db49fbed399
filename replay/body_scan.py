"""The int columns of many packed trace bodies read at once, with numpy.

A body's int columns (``ocb_events.packing``) are msgpack arrays of ints, nearly always
of positive fixints: one byte a value, below 0x80, after a one- or three-byte array
header. Here a column of a whole batch of bodies (``raw_columns``: one msgspec.Raw a
body) is joined into one buffer and read with a few vector operations: each array's
header, its length, and its values as the bytes they are. An array that is not laid
out so (ints of two bytes, negative ints, a map, damage) is read by msgspec alone,
which checks it; one that does not decode marks its body unreadable (``ok``).

The steps' followed ids (an array of arrays) are read the same way, list position by
list position across every body at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

_PAD = 8
_INTS = msgspec.msgpack.Decoder(list[int])
_LISTS = msgspec.msgpack.Decoder(list[list[int]])


def _joined(raws: Sequence[Any]) -> tuple[Any, I64, I64]:
    """The raws end to end as bytes (with room to read a header past the end), and where
    each starts and ends."""
    sizes = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
    ends = np.cumsum(sizes)
    buf = np.frombuffer(b"".join(raws) + bytes(_PAD), dtype=np.uint8)
    return buf, ends - sizes, ends


def _heads(buf: Any, starts: I64, ends: I64) -> tuple[I64, I64]:
    """Each array's length and the size of its header (-1, 0: not an array)."""
    head = buf[starts].astype(np.int64)
    count = np.full(len(starts), -1, dtype=np.int64)
    skip = np.zeros(len(starts), dtype=np.int64)
    fix = (head >= 0x90) & (head <= 0x9F) & (ends > starts)
    count[fix], skip[fix] = head[fix] & 0x0F, 1
    d16 = (head == 0xDC) & (ends - starts >= 3)
    at = starts[d16]
    count[d16] = (buf[at + 1].astype(np.int64) << 8) | buf[at + 2]
    skip[d16] = 3
    return count, skip


def _inside(starts: I64, ends: I64, skip: I64, fast: Mask) -> Mask:
    """A mask of the bytes of the ``fast`` arrays after their headers."""
    keep = np.repeat(fast, ends - starts)
    for j in range(int(skip.max()) if len(skip) else 0):
        keep[(starts + j)[skip > j]] = False
    return keep


def _values(buf: Any, starts: I64, ends: I64, skip: I64, fast: Mask) -> Any:
    """The bytes of the ``fast`` arrays after their headers, end to end."""
    return buf[: len(buf) - _PAD][_inside(starts, ends, skip, fast)]


def _merge(fast: Mask, counts: I64, values: Any, slow: dict[int, list[int]]) -> tuple[I64, I64]:
    """Every array's length and all values in order, from the ones read as bytes
    (``fast``, their ``values`` end to end) and the others (``slow``, by index)."""
    counts = np.where(fast, counts, 0)
    for i, vals in slow.items():
        counts[i] = len(vals)
    if not slow:
        return counts, np.asarray(values, dtype=np.int64)
    offsets = np.cumsum(counts) - counts
    out = np.empty(int(counts.sum()), dtype=np.int64)
    per = counts[fast]
    at = np.repeat(offsets[fast] - (np.cumsum(per) - per), per)
    out[at + np.arange(len(at), dtype=np.int64)] = values
    for i, vals in slow.items():
        out[offsets[i] : offsets[i] + len(vals)] = vals
    return counts, out


def read_ints(raws: Sequence[Any]) -> tuple[I64, I64, Mask]:
    """Many msgpack arrays of ints: how many each holds, all their values end to end,
    and which ones decoded (one that did not counts no values)."""
    buf, starts, ends = _joined(raws)
    count, skip = _heads(buf, starts, ends)
    fast = (count >= 0) & (ends - starts == skip + count)
    values = _values(buf, starts, ends, skip, fast)
    if len(values) and values.max() >= 0x80:  # a negative fixint, or a wider int's head
        per = count[fast]
        owner = np.repeat(np.flatnonzero(fast), per)
        fast[np.unique(owner[values >= 0x80])] = False
        values = _values(buf, starts, ends, skip, fast)
    ok = np.ones(len(raws), dtype=bool)
    slow: dict[int, list[int]] = {}
    for i in np.flatnonzero(~fast).tolist():
        try:
            slow[i] = _INTS.decode(bytes(raws[i]))
        except (msgspec.DecodeError, msgspec.ValidationError):
            ok[i], slow[i] = False, []
    counts, flat = _merge(fast, count, values, slow)
    return counts, flat, ok


def read_lists(raws: Sequence[Any]) -> tuple[I64, I64, I64, Mask]:
    """Many msgpack arrays of arrays of ints: how many lists each holds, every list's
    length and all their values, list after list, and which ones decoded."""
    buf, starts, ends = _joined(raws)
    count, skip = _heads(buf, starts, ends)
    fast = (count >= 0) & (count <= ends - starts - skip)  # (a list takes a byte or more)
    pos = starts + skip
    heads: list[I64] = []
    for j in range(int(count[fast].max()) if fast.any() else 0):
        live = np.flatnonzero(fast & (count > j))
        head = buf[np.minimum(pos[live], len(buf) - 1)].astype(np.int64)
        fix = (head >= 0x90) & (head <= 0x9F) & (pos[live] < ends[live])
        fast[live[~fix]] = False
        live, head = live[fix], head[fix]
        heads.append(pos[live])
        pos[live] += 1 + (head & 0x0F)
    fast &= pos == ends
    at = np.sort(np.concatenate(heads)) if heads else np.empty(0, dtype=np.int64)
    size = len(buf) - _PAD
    if not fast.all():
        at = at[np.repeat(fast, ends - starts)[at]]  # the lists of fast arrays
    region = _inside(starts, ends, skip, fast)
    region[at] = False
    values = buf[:size][region]
    lens = buf[at].astype(np.int64) & 0x0F
    if len(values) and values.max() >= 0x80:
        bad = np.unique(np.searchsorted(ends, np.flatnonzero(region)[values >= 0x80], "right"))
        fast[bad] = False
        keep = np.isin(np.searchsorted(ends, at, "right"), np.flatnonzero(fast))
        region &= np.repeat(fast, ends - starts)
        values, at, lens = buf[:size][region], at[keep], lens[keep]
    ok = np.ones(len(raws), dtype=bool)
    slow_lens: dict[int, list[int]] = {}
    slow_ids: dict[int, list[int]] = {}
    for i in np.flatnonzero(~fast).tolist():
        try:
            lists = _LISTS.decode(bytes(raws[i]))
        except (msgspec.DecodeError, msgspec.ValidationError):
            ok[i], lists = False, []
        slow_lens[i] = [len(v) for v in lists]
        slow_ids[i] = [x for v in lists for x in v]
    n_lists, all_lens = _merge(fast, count, lens, slow_lens)
    per_trace = np.bincount(
        np.repeat(np.arange(len(raws)), np.where(fast, count, 0)), weights=lens, minlength=len(raws)
    ).astype(np.int64)
    _, ids = _merge(fast, per_trace, values, slow_ids)
    return n_lists, all_lens, ids, ok
