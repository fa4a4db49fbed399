"""Loading a flush of rows into the analytics store's tables: each table's columns
handed to DuckDB as one dict of numpy arrays and inserted in one statement (names as
codes of ``store.ids``, the new ones appended first: ``store_names``); the rows of
the present (``nodes``, ``edges``) replaced by key; outcomes whose trace came in an
earlier flush resolved against the store. Each function takes the caller's connection
(``replay.analytics`` opens it) inside its transaction.
"""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np

from replay.columns import HEADS, column, grouped
from replay.rows import RowFold
from replay.tables import APART, TABLES, VARCHAR, VARCHARS, store_columns
from replay.trace_rows import Names

KEY_PROBE = "ocb edge"
"""What the store's meta hashes (``probe``) to tell stores of another DuckDB."""


def by_edge(data: dict[str, Any]) -> dict[str, Any]:
    """A flush's rows of ``deltas`` (in log order: by seq, then ord) ordered by the
    codes of their edge, then seq and ord: an edge's changes lie in a few row groups of
    ``store.deltas``, and DuckDB's zone maps skip the others when it is audited. Stable
    sorts of numbers (``_edge_order``)."""
    order = _edge_order(np.ma.getdata(data["source"]), np.ma.getdata(data["target"]))
    return {name: col[order] for name, col in data.items()}


def _edge_order(source: Any, target: Any) -> Any:
    """The stable order of rows by their edge's codes (never negative): sorted by the
    16-bit digits of the target, then of the source, least first, each one a stable
    radix sort (digits zero in every row skipped)."""
    order = None
    for col in (target, source):
        top = int(col.max()) if len(col) else 0
        for shift in range(0, max(top.bit_length(), 1), 16):
            now = col if order is None else col[order]
            step = np.argsort(((now >> shift) & 0xFFFF).astype(np.uint16), kind="stable")
            order = step if order is None else order[step]
    return np.arange(len(source)) if order is None else order


_NAMES = "WITH _names AS (SELECT list(name ORDER BY id) AS n FROM store.ids) "
"""Every name of ``store.ids`` as one list, its code + 1 the place of each (codes are
0, 1, 2 ...): a list of codes becomes its names by ``list_transform``, with no join."""
PATHS = (
    "INSERT INTO store.paths "
    + _NAMES
    + "SELECT b.seq, list(_names.n[b.node + 1] || ' -> ' || _names.n[b.chosen + 1] "
    "ORDER BY b.step) FROM _batch b CROSS JOIN _names GROUP BY b.seq"
)
"""Each trace's walk (``node -> chosen``, step by step) in ``store.paths`` (no view),
built from the same batch as ``steps``: an audit reads the paths of its traces there
rather than among every trace's steps."""


def store_names(con: duckdb.DuckDBPyConnection, names: Names) -> None:
    """Append the names coded since the last flush to ``store.ids`` (before the rows
    that use them)."""
    upto = len(names.table)
    if upto == names.stored:
        return
    new = names.table[names.stored : upto]
    data = {"id": np.arange(names.stored, upto, dtype=np.int32), "name": column(VARCHAR, new)}
    con.register("_names", data)
    try:
        con.execute("INSERT INTO store.ids SELECT id, name FROM _names")
    finally:
        con.unregister("_names")
    names.stored = upto


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


Followed = tuple[Any, Any]
"""The ``followed`` ids of a batch of steps as numbers: how many each step has, and all
of them as codes of ``store.ids``, step after step (``replay.trace_rows``)."""

_FOLLOWED = (
    "LEFT JOIN (SELECT x.row, list(_names.n[x.node + 1] ORDER BY x.k) AS followed "
    "FROM _fol x, _names GROUP BY x.row) f ON f.row = _batch._row"
)
WIDE = 8
"""Up to this many followed ids a step, they go as one column of codes per place,
made names in place; a batch with longer lists goes as one row per id, aggregated."""


def _followed(data: dict[str, Any], followed: Followed) -> tuple[str, str, dict[str, Any]]:
    """How ``insert`` reads the steps' followed ids: the expression of the list, the
    joins it needs, and the tables to register besides ``_batch`` (``_names`` is in
    scope: ``_NAMES``)."""
    lens, codes = followed
    data["_row"] = np.arange(len(lens), dtype=np.int64)
    width = int(lens.max()) if len(lens) else 0
    if width > WIDE:
        fol = {"row": np.repeat(data["_row"], lens), "k": np.arange(len(codes), dtype=np.int64)}
        return "coalesce(f.followed, []::VARCHAR[])", _FOLLOWED, {"_fol": fol | {"node": codes}}
    if not width:
        return "[]::VARCHAR[]", "", {}
    data["_n"] = lens
    starts = np.cumsum(lens) - lens
    for j in range(width):
        has = lens > j
        col = np.zeros(len(lens), dtype=np.int32)  # (a place past a step's list: cut)
        col[has] = codes[starts[has] + j]
        data[f"_f{j}"] = col
    places = ", ".join(f"_batch._f{j}" for j in range(width))
    return (
        f"list_transform(list_slice([{places}], 1, _batch._n), lambda c: _names.n[c + 1])",
        "",
        {},
    )


def insert(
    con: duckdb.DuckDBPyConnection,
    table: str,
    data: dict[str, Any],
    *,
    followed: Followed | None = None,
) -> None:
    """Load columns (numpy arrays by column name) into ``store.<table>`` in one statement
    (``followed``: the steps' followed ids as codes, made lists of names by DuckDB)."""
    cols = store_columns(table)
    names = ", ".join(c for c, _ in cols)
    picks, source, listed = [], "_batch", ""
    more: dict[str, Any] = {}
    prefix = ""
    if followed is not None:
        listed, joins, more = _followed(data, followed)
        source, prefix = f"_batch CROSS JOIN _names {joins}", _NAMES
    for c, kind in cols:
        if c == "followed" and followed is not None:
            picks.append(listed)
            continue
        joined_col = _joined(data[c]) if kind == VARCHARS else None
        if joined_col is None:
            picks.append(f"_batch.{c}")
        else:
            data[c] = joined_col
            picks.append(f"string_split(_batch.{c}, chr(31))[2:]")
    sql = f"INSERT INTO store.{table} ({names}) {prefix}SELECT {', '.join(picks)} FROM {source}"
    heads = data.pop(HEADS, None)
    if heads is not None:
        _insert_heads(con, APART[table], heads)
    if table == "deltas":
        data = by_edge(data)
    elif followed is not None:
        sql += " ORDER BY _batch._row"
    more["_batch"] = data
    try:
        for name, columns in more.items():
            con.register(name, columns)
        con.execute(sql)
        if table == "steps":
            con.execute(PATHS)
    finally:
        for name in more:
            con.unregister(name)


def _insert_heads(con: duckdb.DuckDBPyConnection, table: str, heads: dict[str, Any]) -> None:
    """Load the heads of a table kept apart (``replay.tables.APART``) into ``store.<table>``."""
    names = ", ".join(heads)
    con.register("_heads", heads)
    try:
        con.execute(f"INSERT INTO store.{table} ({names}) SELECT {names} FROM _heads")
    finally:
        con.unregister("_heads")


def load(con: duckdb.DuckDBPyConnection, table: str, rows: list[Any]) -> None:
    if not rows:
        return
    cols = TABLES[table]
    data = {
        name: column(kind, vals)
        for (name, kind), vals in zip(cols, zip(*rows, strict=True), strict=True)
    }
    insert(con, table, data)


Batch = tuple[dict[str, Any], Followed | None]
"""A grouped table's columns, with the steps' followed ids as codes when they hold none."""


def tail_columns_of(fold: RowFold) -> dict[str, dict[str, Any]]:
    """The rows of grouped tables gathered row by row, as columns with their names
    coded (in the folding thread: codes are given in the order of the log)."""
    return {
        table: grouped(table, tails, fold.groups[table], fold.names)
        for table, tails in fold.tails.items()
        if len(tails)
    }


def grouped_batches(fold: RowFold, table: str, tails: dict[str, dict[str, Any]]) -> list[Batch]:
    """The rows of a grouped table as columns: those of traces gathered from their
    bodies (``fold.traces_rows``), then those gathered row by row (``tails``, from
    ``tail_columns_of``)."""
    out: list[Batch] = []
    batch = fold.trace_rows.tables().get(table) if len(fold.trace_rows) else None
    if batch is not None and len(batch["seq"]):
        out.append((batch, fold.trace_rows.followed if table == "steps" else None))
    if table in tails:
        out.append((tails[table], None))
    return out


def load_grouped(con: duckdb.DuckDBPyConnection, table: str, batches: list[Batch]) -> None:
    """Load the rows of a grouped table (``grouped_batches``; their names in
    ``store.ids`` already)."""
    for data, followed in batches:
        insert(con, table, data, followed=followed)


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
