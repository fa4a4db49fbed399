"""The ``updates`` of many ``edges_updated`` records parsed at once, with numpy.

Each record's updates are a msgpack array of ``[source, [target, ...], [delta, ...]]``
(``EdgeDeltas``, stored as an array). Decoding them into objects costs a microsecond
an update; here the bytes of a whole run of records are walked for all records in
step, one vector operation per update and per target position (a few hundred per
run), checking every header and every float on the way, so the result is exact or
there is none: anything else (another item type, lists of two lengths, a float that
is not a float64) gives None and the caller decodes those records one by one.
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
    buf = np.frombuffer(data + bytes(8), dtype=np.uint8)  # room to read a header past the end
    sizes = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
    ends = np.cumsum(sizes)
    starts = ends - sizes
    if len(raws) == 0 or (sizes == 0).any():
        return None
    head = _array_head(buf, starts)
    if head is None:
        return None
    counts, width = head
    found = _walk(buf, starts + width, ends, counts)
    if found is None:
        return None
    key_start, key_end, lengths, floats_at = found
    deltas = _floats(buf, floats_at, lengths)
    if deltas is None:
        return None
    return Updates(data, key_start.tolist(), key_end.tolist(), lengths, counts.tolist(), deltas)


def scan_baselines(raws: Sequence[Any]) -> tuple[list[bytes], Any] | None:
    """The baselines of each of ``raws`` (msgpack arrays of ``[node, value]``) in order:
    each node id as its msgpack bytes, and the values; None when one is laid out
    otherwise."""
    data = b"".join(raws)
    buf = np.frombuffer(data + bytes(8), dtype=np.uint8)
    sizes = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
    ends = np.cumsum(sizes)
    head = _array_head(buf, ends - sizes) if len(raws) and (sizes > 0).all() else None
    if head is None:
        return None
    counts, width = head
    pos = ends - sizes + width
    total = int(counts.sum())
    first = np.cumsum(counts) - counts
    starts, stops = np.empty(total, np.int64), np.empty(total, np.int64)
    for k in range(int(counts.max(initial=0))):
        act = np.flatnonzero(counts > k)
        q = pos[act]
        if not (buf[q] == 0x92).all():  # [node, value]
            return None
        after = _strings(buf, q + 1, np.ones_like(q), len(buf) - 8)
        if after is None:
            return None
        at = first[act] + k
        starts[at], stops[at] = q + 1, after
        pos[act] = after + 9
    if not np.array_equal(pos, ends):
        return None
    values = _floats(buf, stops, np.ones(total, dtype=np.int64))
    if values is None:
        return None
    return [data[a:b] for a, b in zip(starts.tolist(), stops.tolist(), strict=True)], values


def _walk(
    buf: npt.NDArray[np.uint8], pos: I64, ends: I64, counts: I64
) -> tuple[I64, I64, I64, I64] | None:
    """Per update (records in order, updates in order within each): where its source
    starts, where its delta list starts (the key of its shape is between), its number
    of targets and where its first float is."""
    total = int(counts.sum())
    first = np.cumsum(counts) - counts
    key_start, key_end = np.empty(total, np.int64), np.empty(total, np.int64)
    lengths, floats_at = np.empty(total, np.int64), np.empty(total, np.int64)
    limit = len(buf) - 8
    for k in range(int(counts.max(initial=0))):
        act = np.flatnonzero(counts > k)
        q = pos[act]
        if not (buf[q] == 0x93).all():  # [source, targets, deltas]
            return None
        source = q + 1
        listed = _strings(buf, source, np.ones_like(q), limit)
        targets = _array_head(buf, listed) if listed is not None else None
        if listed is None or targets is None:
            return None
        m, width = targets
        after = _strings(buf, listed + width, m, limit)
        delta_head = _array_head(buf, after) if after is not None else None
        if after is None or delta_head is None or not np.array_equal(delta_head[0], m):
            return None
        at = first[act] + k
        key_start[at], key_end[at], lengths[at] = source, after, m
        floats_at[at] = after + delta_head[1]
        pos[act] = floats_at[at] + 9 * m
        if (pos[act] > ends[act]).any():
            return None
    if not np.array_equal(pos, ends):
        return None
    return key_start, key_end, lengths, floats_at


def _strings(buf: npt.NDArray[np.uint8], q: I64, n: I64, limit: int) -> I64 | None:
    """Where ``n[i]`` strings starting at ``q[i]`` end (None: one is not a string)."""
    q = q.copy()
    live = np.flatnonzero(n > 0)
    j = 0
    while len(live):
        at = q[live]
        if int(at.max()) >= limit:
            return None
        c = buf[at]
        size = _STR[c]
        odd = np.flatnonzero(size == 0)
        if len(odd):
            b1 = buf[at[odd] + 1].astype(np.int64)
            b2 = buf[at[odd] + 2].astype(np.int64)
            kind = c[odd]
            size[odd] = np.where(
                kind == 0xD9, 2 + b1, np.where(kind == 0xDA, 3 + (b1 << 8 | b2), 0)
            )
            if (size == 0).any():
                return None
        q[live] = at + size
        j += 1
        live = live[n[live] > j]
    return q


def _array_head(buf: npt.NDArray[np.uint8], q: I64) -> tuple[I64, I64] | None:
    """The item count and header width of the arrays starting at ``q`` (None: one is
    not an array of fewer than 65,536 items)."""
    if len(q) and int(q.max()) >= len(buf) - 8:
        return None
    c = buf[q].astype(np.int64)
    small = (c & 0xF0) == 0x90
    if not (small | (c == 0xDC)).all():
        return None
    wide = (buf[q + 1].astype(np.int64) << 8) | buf[q + 2]
    return np.where(small, c & 0x0F, wide), np.where(small, 1, 3)


def _floats(buf: npt.NDArray[np.uint8], at: I64, lengths: I64) -> Any:
    """The float64 lists of ``lengths`` items starting at ``at`` (None: an item is not
    a float64)."""
    total = int(lengths.sum())
    offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
    fp = np.repeat(at, lengths) + 9 * (np.arange(total) - offsets)
    items = np.lib.stride_tricks.sliding_window_view(buf, 9)[fp]  # (total, 9) bytes
    if total and not (items[:, 0] == 0xCB).all():
        return None
    return np.ascontiguousarray(items[:, 1:]).view(">f8").ravel().astype(np.float64)


def _string_sizes() -> I64:
    """The size of a fixstr by its first byte (0 for any other byte)."""
    table = np.zeros(256, dtype=np.int64)
    table[0xA0:0xC0] = 1 + np.arange(32)
    return table


_STR = _string_sizes()
