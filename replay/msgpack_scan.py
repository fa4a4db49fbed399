"""The ``updates`` of many ``edges_updated`` records parsed at once, with numpy.

Each record's updates are a msgpack array of ``[source, [target, ...], [delta, ...]]``
(``EdgeDeltas``, stored as an array). Decoding them into objects costs a microsecond
an update; here the bytes of a whole run of records are walked item by item for all
records in step (one vector operation per item position, a few hundred per run), then
checked against that layout, so the result is exact or there is none: anything else
(another item type, lists of two lengths, a float that is not a float64) gives None
and the caller decodes those records one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


class Updates(msgspec.Struct, frozen=True):
    """A run's updates: its joined bytes; per update the span of ``data`` holding its
    source and targets (the key of its shape) and its number of targets; per record
    its number of updates; every delta in order."""

    data: bytes
    key_start: list[int]
    key_end: list[int]
    lengths: Any  # I64
    counts: list[int]
    deltas: Any  # float64 array


def scan_updates(raws: Sequence[Any]) -> Updates | None:
    """The updates of each of ``raws`` (msgpack bytes), or None when one is not laid
    out as the encoder writes ``EdgeDeltas``."""
    data = b"".join(raws)
    buf = np.frombuffer(data + bytes(4), dtype=np.uint8)  # room to read past the end
    sizes = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
    ends = np.cumsum(sizes)
    tokens = _items(buf, ends - sizes, ends)
    if tokens is None:
        return None
    tp, first = tokens
    return _layout(data, buf, tp, first)


def _size_table() -> I64:
    """The size of an item by its first byte, 0 for a type updates never hold (and
    for str8 and str16, whose size is in the next bytes)."""
    table = np.zeros(256, dtype=np.int64)
    table[0xA0:0xC0] = 1 + np.arange(32)  # fixstr
    table[0x90:0xA0] = 1  # fixarray
    table[0xCB] = 9  # float64
    table[0xDC] = 3  # array16
    return table


_SIZE = _size_table()


def _sizes(buf: npt.NDArray[np.uint8], q: I64) -> I64 | None:
    """The size of the item starting at each ``q``; None if one is of a type updates
    never hold."""
    c = buf[q]
    size = _SIZE[c]
    odd = np.flatnonzero(size == 0)
    if len(odd):
        at, kind = q[odd], c[odd]
        b1, b2 = buf[at + 1].astype(np.int64), buf[at + 2].astype(np.int64)
        size[odd] = np.where(kind == 0xD9, 2 + b1, np.where(kind == 0xDA, 3 + (b1 << 8 | b2), 0))
        if (size == 0).any():
            return None
    return size


def _items(buf: npt.NDArray[np.uint8], starts: I64, ends: I64) -> tuple[I64, I64] | None:
    """The start of every item (array headers included) in buffer order, and the index
    of each record's first item; None on an item type updates never hold or an item
    that runs past its record."""
    pos = starts.copy()
    active = np.flatnonzero(pos < ends)
    steps: list[tuple[I64, I64]] = []
    while len(active):
        q = pos[active]
        size = _sizes(buf, q)
        if size is None:
            return None
        steps.append((active, q))
        pos[active] = q + size
        active = active[pos[active] < ends[active]]
    if not np.array_equal(pos, ends) or not steps:
        return None
    grid = np.full((len(starts), len(steps)), -1, dtype=np.int64)
    for k, (act, q) in enumerate(steps):
        grid[act, k] = q
    per = (grid >= 0).sum(axis=1)
    flat = grid.ravel()
    return flat[flat >= 0], np.cumsum(per) - per


def _layout(data: bytes, buf: npt.NDArray[np.uint8], tp: I64, first: I64) -> Updates | None:
    """Check the items against the layout of updates and read it off."""
    c = buf[tp]
    is_arr = ((c & 0xF0) == 0x90) | (c == 0xDC)
    if not is_arr[first].all():
        return None
    heads_all = np.flatnonzero(is_arr)
    hp, hc = tp[heads_all], c[heads_all].astype(np.int64)
    count_all = np.where(hc == 0xDC, buf[hp + 1].astype(np.int64) << 8 | buf[hp + 2], hc & 0x0F)
    outer = np.isin(heads_all, first, assume_unique=True)
    counts = count_all[outer]
    heads, count = heads_all[~outer], count_all[~outer]
    if len(heads) != 3 * int(counts.sum()):
        return None
    x, y, z = heads[0::3], heads[1::3], heads[2::3]
    m, mp = count[1::3], count[2::3]
    if not ((count[0::3] == 3).all() and (y == x + 2).all() and (z == y + 1 + m).all()):
        return None
    if not np.array_equal(m, mp):
        return None
    # each update starts where the one before it ended, or just after its record's head
    end = z + 1 + mp
    owner = np.repeat(np.arange(len(first)), counts)
    starts_record = np.concatenate(([True], owner[1:] != owner[:-1]))[: len(x)]
    expected = np.where(starts_record, first[owner] + 1, np.concatenate(([0], end[:-1])))
    nxt = np.append(first[1:], len(tp))
    if not np.array_equal(x, expected) or not np.array_equal(nxt[counts > 0], _lasts(end, counts)):
        return None
    # the floats are exactly the deltas: as many inside each delta list as it holds,
    # and no more anywhere
    floats = c == 0xCB
    seen = np.concatenate(([0], np.cumsum(floats, dtype=np.int64)))
    if int(seen[-1]) != int(mp.sum()) or not np.array_equal(seen[end] - seen[z + 1], mp):
        return None
    fp = tp[floats]
    raw = buf[fp[:, None] + np.arange(1, 9)]
    deltas = np.ascontiguousarray(raw).view(">f8").ravel().astype(np.float64)
    return Updates(
        data=data,
        key_start=tp[x + 1].tolist(),
        key_end=tp[z].tolist(),
        lengths=m,
        counts=counts.tolist(),
        deltas=deltas,
    )


def _lasts(end: I64, counts: I64) -> I64:
    """The end of the last update of each record that has updates."""
    return end[np.cumsum(counts)[counts > 0] - 1]
