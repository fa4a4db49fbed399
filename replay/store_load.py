"""Loading a flush of rows into the analytics store's tables: each table's columns
handed to DuckDB as one dict of numpy arrays and inserted in one statement; the rows of
the present (``nodes``, ``edges``) replaced by key; outcomes whose trace came in an
earlier flush resolved against the store. Each function takes the caller's connection
(``replay.analytics`` opens it) inside its transaction.
"""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np

from replay.columns import Tails, column, grouped
from replay.rows import RowFold
from replay.tables import TABLES, VARCHAR, VARCHARS

EDGE_KEY = "hash(source, target)"
"""The key ``store.deltas`` keeps beside each change (column ``edge``, not in the view):
a flush's changes are stored ordered by it, so DuckDB's zone maps skip the row groups
that hold no change of an audited edge. The store records what DuckDB's ``hash`` gives
for ``KEY_PROBE`` and is rebuilt when another DuckDB hashes otherwise."""
KEY_PROBE = "ocb edge"

PATHS = (
    "INSERT INTO store.paths SELECT seq, list(node || ' -> ' || chosen ORDER BY step) "
    "FROM _batch GROUP BY seq"
)
"""Each trace's walk (``node -> chosen``, step by step) in ``store.paths`` (no view),
built from the same batch as ``steps``: an audit reads the paths of its traces there
rather than among every trace's steps."""


_SEP = "\x1f"


def _joined(lists: Any) -> Any:
    """Lists of strings as one string each (every item after ``_SEP``), which DuckDB
    splits back far faster than it reads Python lists; None when an item holds
    ``_SEP`` itself."""
    out = np.empty(len(lists), dtype=object)
    out[:] = [None if v is None else _SEP + _SEP.join(v) if len(v) else "" for v in lists]
    items = sum(len(v) for v in lists if v is not None)
    if "".join(v for v in out if v is not None).count(_SEP) != items:
        return None
    return out


def insert(
    con: duckdb.DuckDBPyConnection, table: str, data: dict[str, Any], *, joined: bool = False
) -> None:
    """Load columns (numpy arrays by column name) into ``store.<table>`` in one statement
    (``joined``: its lists of strings come joined already, each item after ``_SEP``)."""
    names = ", ".join(c for c, _ in TABLES[table])
    picks = []
    for c, kind in TABLES[table]:
        if kind == VARCHARS and joined:
            picks.append(f"string_split({c}, chr(31))[2:] AS {c}")
            continue
        joined_col = _joined(data[c]) if kind == VARCHARS else None
        if joined_col is None:
            picks.append(c)
        else:
            data[c] = joined_col
            picks.append(f"string_split({c}, chr(31))[2:] AS {c}")
    sql = f"INSERT INTO store.{table} ({names}) SELECT {', '.join(picks)} FROM _batch"
    if table == "deltas":
        sql = (
            f"INSERT INTO store.deltas ({names}, edge) SELECT {names}, {EDGE_KEY} AS edge "
            "FROM _batch ORDER BY edge, seq, ord"
        )
    con.register("_batch", data)
    try:
        con.execute(sql)
        if table == "steps":
            con.execute(PATHS)
    finally:
        con.unregister("_batch")


def load(con: duckdb.DuckDBPyConnection, table: str, rows: list[Any]) -> None:
    if not rows:
        return
    cols = TABLES[table]
    data = {
        name: column(kind, vals)
        for (name, kind), vals in zip(cols, zip(*rows, strict=True), strict=True)
    }
    insert(con, table, data)


def load_grouped(con: duckdb.DuckDBPyConnection, table: str, fold: RowFold) -> None:
    """The rows of a grouped table: those of traces gathered from their bodies
    (``fold.traces_rows``), then those gathered row by row."""
    batch = fold.trace_rows.tables().get(table) if len(fold.trace_rows) else None
    if batch is not None and len(batch["seq"]):
        insert(con, table, batch, joined=fold.trace_rows.joined)
    tails: Tails = fold.tails[table]
    if len(tails):
        insert(con, table, grouped(table, tails, fold.groups[table]))


def resolve_traces(con: duckdb.DuckDBPyConnection, fold: RowFold) -> None:
    """Fill the trace seq of outcomes whose trace was recorded before this run."""
    if not fold.unresolved:
        return
    rows = fold.rows["outcomes"]
    ids = sorted({str(rows[i][3]) for i in fold.unresolved})
    con.register("_ids", {"trace_id": column(VARCHAR, tuple(ids))})
    try:
        found = dict(
            con.execute(
                "SELECT t.trace_id, max(t.seq) FROM store.traces t "
                "JOIN _ids USING (trace_id) GROUP BY t.trace_id"
            ).fetchall()
        )
    finally:
        con.unregister("_ids")
    for i in fold.unresolved:
        r = rows[i]
        rows[i] = (*r[:4], found.get(r[3]), *r[5:])


def replace(
    con: duckdb.DuckDBPyConnection, table: str, keys: tuple[str, ...], rows: list[Any]
) -> None:
    """Delete the rows of ``table`` whose key is in ``rows`` (new values follow)."""
    if not rows:
        return
    kinds = dict(TABLES[table])
    data = {
        k: column(kinds[k], vals) for k, vals in zip(keys, zip(*rows, strict=True), strict=True)
    }
    match = " AND ".join(f"store.{table}.{k} = _keys.{k}" for k in keys)
    con.register("_keys", data)
    try:
        con.execute(f"DELETE FROM store.{table} USING _keys WHERE {match}")
    finally:
        con.unregister("_keys")
