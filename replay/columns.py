"""The rows of the analytics store as numpy columns, the form DuckDB loads in bulk
(``replay.analytics`` hands it one dict of columns per table and flush).

Grouped tables (``replay.tables.GROUPED``) are gathered column by column as records are
folded (``Tails``, ``DeltaTails``): a record's values are appended to each column's list
at C speed, with no tuple per row, and each list becomes one array at flush.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from typing import Any

import numpy as np

from replay.tables import (
    APART,
    BIGINT,
    BY_TRACE,
    CODED,
    DOUBLE,
    DOUBLES,
    GROUPED,
    INTEGER,
    TABLES,
    TIMESTAMP,
    VARCHARS,
    tail_columns,
)
from replay.trace_rows import Names


def _masked(values: Sequence[Any], dtype: Any) -> Any:
    mask = np.fromiter((v is None for v in values), dtype=bool, count=len(values))
    data = np.asarray([0 if v is None else v for v in values], dtype=dtype)
    return np.ma.masked_array(data, mask=mask)


def _doubles(values: Sequence[Any]) -> Any:
    """Floats, masked where None (NaN stays NaN): only the NaNs are looked at twice."""
    data = np.asarray(values, dtype=np.float64)  # None reads as NaN
    nan = np.flatnonzero(np.isnan(data))
    if not nan.size:
        return data
    mask = np.zeros(len(data), dtype=bool)
    mask[[i for i in nan.tolist() if values[i] is None]] = True
    if not mask.any():
        return data
    data[mask] = 0.0
    return np.ma.masked_array(data, mask=mask)


def column(kind: str, values: Sequence[Any]) -> Any:
    """A numpy column DuckDB scans without copying row by row (masked where NULL)."""
    if kind == TIMESTAMP:
        return np.asarray(values, dtype=np.int64).view("datetime64[ns]")
    if kind == DOUBLE:
        return _doubles(values)
    if kind in (BIGINT, INTEGER):
        try:
            return np.asarray(values, dtype=np.int64)
        except TypeError:  # a None among them
            return _masked(values, np.int64)
    if kind in (VARCHARS, DOUBLES):  # one list per row, never a 2-D array
        return np.fromiter(values, dtype=object, count=len(values))
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class Tails:
    """The tails (``replay.tables.tail_columns``) of a grouped table's new rows, one
    list per column."""

    __slots__ = ("cols",)

    def __init__(self, width: int) -> None:
        self.cols: list[list[Any]] = [[] for _ in range(width)]

    def __len__(self) -> int:
        return len(self.cols[0])

    def add(self, row: Sequence[Any]) -> None:
        """Append one row (its values in column order)."""
        for col, v in zip(self.cols, row, strict=True):
            col.append(v)

    def arrays(self, kinds: Sequence[str]) -> list[Any]:
        return [column(k, c) for k, c in zip(kinds, self.cols, strict=True)]


class DeltaTails(Tails):
    """The tails of ``deltas`` (source, target, before, after, delta): rows of a weight
    update take ``after`` as ``before + delta`` clipped to [-1, 1], computed for all of
    them at once (the graph projection's clip, the same float operations). Rows come
    one at a time or as whole columns (``add_columns``), kept in the order given."""

    __slots__ = ("calc", "names", "pieces", "sealed")

    def __init__(self, names: Names) -> None:
        super().__init__(5)
        self.names = names
        self.calc: list[bool] = []
        self.pieces: list[list[Any]] = []
        self.sealed = 0

    def __len__(self) -> int:
        return self.sealed + len(self.cols[0])

    def add_columns(self, cols: list[Any]) -> None:
        """Append rows given as columns (numpy arrays, ``after`` computed; source and
        target as codes of ``names``)."""
        if self.cols[0]:
            self.pieces.append(self._lists(_KINDS))
            self.sealed += len(self.cols[0])
            self.cols = [[] for _ in range(5)]
            self.calc = []
        self.pieces.append(cols)
        self.sealed += len(cols[0])

    def add(self, row: Sequence[Any]) -> None:
        super().add(row)
        self.calc.append(False)

    def update(self, source: str, targets: Sequence[str], before: list[float], d: Any) -> None:
        """Append the rows of one source's changes (``after`` computed at flush)."""
        n = len(targets)
        src, tgt, bef, aft, delta = self.cols
        src.extend(repeat(source, n))
        tgt.extend(targets)
        bef.extend(before)
        aft.extend(repeat(0.0, n))
        delta.extend(d)
        self.calc.extend(repeat(True, n))

    def arrays(self, kinds: Sequence[str]) -> list[Any]:
        pieces = [*self.pieces, self._lists(kinds)] if self.cols[0] else self.pieces
        if len(pieces) == 1:
            return list(pieces[0])
        if not pieces:
            return self._lists(kinds)
        return [_concatenate([p[i] for p in pieces]) for i in range(5)]

    def _lists(self, kinds: Sequence[str]) -> list[Any]:
        src, tgt, before, after, delta = super().arrays(kinds)
        src, tgt = self.names.coded(src), self.names.coded(tgt)
        calc = np.asarray(self.calc, dtype=bool)
        if calc.any():
            computed = np.clip(np.ma.getdata(before) + np.ma.getdata(delta), -1.0, 1.0)
            if np.ma.isMaskedArray(after):
                after.data[calc] = computed[calc]
            else:
                after = np.where(calc, computed, after)
        return [src, tgt, before, after, delta]


_KINDS = tuple(dict(TABLES["deltas"])[c] for c in tail_columns("deltas"))


def _concatenate(arrays: list[Any]) -> Any:
    if any(np.ma.isMaskedArray(a) for a in arrays):
        return np.ma.concatenate(arrays)  # type: ignore[no-untyped-call]
    return np.concatenate(arrays)


HEADS = "_heads"
"""The key of the heads of a table kept apart (``replay.tables.APART``) among the
columns ``grouped`` gives: a dict of columns, one row per group."""


def grouped(
    table: str, tails: Tails, groups: list[tuple[tuple[Any, ...], int]], names: Names
) -> Any:
    """The columns of a grouped table: heads repeated (those kept apart once per group
    under ``HEADS``), ordinals numbered, tails as given; the coded ones
    (``replay.tables.CODED``) as codes of ``names``, without the ``trace_id`` the store
    reads from the trace."""
    kinds = dict(TABLES[table])
    heads, ordinal, first = GROUPED[table]
    coded = CODED[table]
    counts = np.fromiter((n for _, n in groups), dtype=np.int64, count=len(groups))
    once = {
        name: names.coded(vals) if name in coded else column(kinds[name], vals)
        for name, vals in zip(heads, zip(*(h for h, _ in groups), strict=True), strict=True)
        if not (name == "trace_id" and table in BY_TRACE)
    }
    if table in APART:  # the heads once per group that has rows, in their own table
        has = counts > 0
        data: dict[str, Any] = {HEADS: {name: col[has] for name, col in once.items()}}
        data["seq"] = np.repeat(once["seq"], counts)
    else:
        data = {name: np.repeat(col, counts) for name, col in once.items()}
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    data[ordinal] = np.arange(len(starts), dtype=np.int64) - starts + first
    cols = tail_columns(table)
    arrays = tails.arrays([kinds[n] for n in cols])
    data.update((n, names.coded(a) if n in coded else a) for n, a in zip(cols, arrays, strict=True))
    return data
