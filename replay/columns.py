"""The rows of the analytics store as numpy columns, the form DuckDB loads in bulk
(``replay.analytics`` hands it one dict of columns per table and flush)."""

from __future__ import annotations

from typing import Any

import numpy as np

from replay.rows import (
    BIGINT,
    DOUBLE,
    DOUBLES,
    GROUPED,
    INTEGER,
    TABLES,
    TIMESTAMP,
    VARCHARS,
    tail_columns,
)


def column(kind: str, values: tuple[Any, ...]) -> Any:
    """A numpy column DuckDB scans without copying row by row (masked where NULL)."""
    if kind == TIMESTAMP:
        return np.asarray(values, dtype=np.int64).view("datetime64[ns]")
    if kind in (BIGINT, INTEGER, DOUBLE):
        dtype = np.float64 if kind == DOUBLE else np.int64
        if None not in values:
            return np.asarray(values, dtype=dtype)
        mask = np.fromiter((v is None for v in values), dtype=bool, count=len(values))
        data = np.asarray([0 if v is None else v for v in values], dtype=dtype)
        return np.ma.masked_array(data, mask=mask)
    out = np.empty(len(values), dtype=object)
    if kind in (VARCHARS, DOUBLES):
        for i, v in enumerate(values):
            out[i] = v
    else:
        out[:] = values
    return out


def grouped(table: str, tails: list[Any], groups: list[tuple[tuple[Any, ...], int]]) -> Any:
    """The columns of a grouped table: heads repeated, ordinals numbered, tails as given."""
    kinds = dict(TABLES[table])
    heads, ordinal, first = GROUPED[table]
    counts = np.fromiter((n for _, n in groups), dtype=np.int64, count=len(groups))
    data = {
        name: np.repeat(column(kinds[name], vals), counts)
        for name, vals in zip(heads, zip(*(h for h, _ in groups), strict=True), strict=True)
    }
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    data[ordinal] = np.arange(len(starts), dtype=np.int64) - starts + first
    names = tail_columns(table)
    cols = [tuple(tails)] if len(names) == 1 else list(zip(*tails, strict=True))
    data.update({n: column(kinds[n], v) for n, v in zip(names, cols, strict=True)})
    return data
