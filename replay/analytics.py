"""The analytics store: a brain's history as DuckDB tables, derived from its log.

NOTE: this is the only module that imports duckdb, and every ``duckdb.Error`` becomes
an ``AnalyticsError`` here. The store is a cache (``<brain>/cache/analytics.duckdb``),
never the source of truth: it can be deleted at any time and is rebuilt from the log.
It holds the seq it is folded to and catches up from there, reading only the records
after it. A store that cannot be opened, holds another version's schema or does not
match the log is never trusted: it is rebuilt, with a warning.

Layout: the rows live in tables of schema ``store``, loaded in bulk (each flush hands
DuckDB one dict of numpy columns per table and runs one ``INSERT ... SELECT``); the
documented interface is the views of the same names in ``main`` (README, "History: SQL
and audit"). Weights before and after each change are read from the graph projection,
folded alongside the rows with ``projections.graph.evolve`` and snapshotted into the
store with every commit that changed it, so ``deltas`` always agrees with the graph.

Connections: catching up takes a read-write connection; queries run on a read-only one,
so ``ocb sql`` cannot change the store by accident.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import msgspec
import numpy as np

from ocb_events.errors import AnalyticsError
from ocb_events.protocol import EventLog
from projections import graph
from replay.rows import (
    BIGINT,
    DOUBLE,
    DOUBLES,
    GROUPED,
    HISTORY,
    INTEGER,
    TABLES,
    TIMESTAMP,
    VARCHAR,
    VARCHARS,
    RowFold,
    tail_columns,
)

VERSION = 2
"""The schema version; a store of another version is rebuilt."""

CHUNK = 20_000
"""Records folded per commit (each commit holds a consistent seq)."""

Warn = Callable[[str], None]
Progress = Callable[[int, int], None]
_MACROS = (
    "CREATE MACRO tier(w) AS CASE WHEN w IS NULL THEN NULL WHEN w >= 0.6 THEN 'reflex' "
    "WHEN w >= 0.2 THEN 'habitual' WHEN w <= -0.01 THEN 'inhibitory' ELSE 'dormant' END",
)
_VIEW_EXTRA = {"edges": ", tier(weight) AS tier"}


class QueryResult(msgspec.Struct, frozen=True):
    """The rows of a query with their column names and DuckDB types."""

    columns: list[str]
    types: list[str]
    rows: list[tuple[Any, ...]]


def _first_line(exc: BaseException) -> str:
    lines = [x for x in str(exc).splitlines() if x.strip()]
    return lines[0] if lines else type(exc).__name__


def _is_lock(exc: BaseException) -> bool:
    return isinstance(exc, duckdb.IOException) and "lock" in str(exc).lower()


def _busy(path: Path, exc: BaseException) -> AnalyticsError:
    return AnalyticsError(
        f"the analytics store {path} is in use by another process ({_first_line(exc)})",
        "retry when that ocb command has finished",
    )


_WRITES = ("insert", "update", "delete", "create", "drop", "alter", "copy", "attach", "truncate")


def _query_hint(exc: duckdb.Error, sql: str) -> str:
    words = sql.lstrip(" \t\n(").split(None, 1)
    if "read-only" in str(exc) or (words and words[0].lower() in _WRITES):
        return (
            "the analytics store is read-only: it is derived from the log; "
            "change the brain with ocb commands"
        )
    if isinstance(exc, duckdb.ParserException):
        return "check the SQL syntax (DuckDB dialect); examples in README, History"
    if isinstance(exc, duckdb.BinderException):
        return 'see a view\'s columns with: ocb sql "DESCRIBE deltas"'
    return 'list the tables with: ocb sql "SHOW TABLES"'


# --------------------------------------------------------------------------- loading


def _column(kind: str, values: tuple[Any, ...]) -> Any:
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


def _grouped(table: str, tails: list[Any], groups: list[tuple[tuple[Any, ...], int]]) -> Any:
    """The columns of a grouped table: heads repeated, ordinals numbered, tails as given."""
    kinds = dict(TABLES[table])
    heads, ordinal, first = GROUPED[table]
    counts = np.fromiter((n for _, n in groups), dtype=np.int64, count=len(groups))
    data = {
        name: np.repeat(_column(kinds[name], vals), counts)
        for name, vals in zip(heads, zip(*(h for h, _ in groups), strict=True), strict=True)
    }
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    data[ordinal] = np.arange(len(starts), dtype=np.int64) - starts + first
    names = tail_columns(table)
    cols = [tuple(tails)] if len(names) == 1 else list(zip(*tails, strict=True))
    data.update({n: _column(kinds[n], v) for n, v in zip(names, cols, strict=True)})
    return data


def _insert(con: duckdb.DuckDBPyConnection, table: str, data: dict[str, Any]) -> None:
    """Load columns (numpy arrays by column name) into ``store.<table>`` in one statement."""
    names = ", ".join(c for c, _ in TABLES[table])
    con.register("_batch", data)
    try:
        con.execute(f"INSERT INTO store.{table} ({names}) SELECT {names} FROM _batch")
    finally:
        con.unregister("_batch")


def _load(
    con: duckdb.DuckDBPyConnection,
    table: str,
    rows: list[Any],
    groups: list[tuple[tuple[Any, ...], int]] | None = None,
) -> None:
    if not rows:
        return
    if groups is not None:
        _insert(con, table, _grouped(table, rows, groups))
        return
    cols = TABLES[table]
    data = {
        name: _column(kind, vals)
        for (name, kind), vals in zip(cols, zip(*rows, strict=True), strict=True)
    }
    _insert(con, table, data)


def _schema_sql() -> list[str]:
    out = ["CREATE SCHEMA store"]
    out.append(
        "CREATE TABLE store.meta(version INTEGER, last_seq BIGINT, graph_seq BIGINT, "
        "first_ts BIGINT)"
    )
    out.append("CREATE TABLE store.graph(seq BIGINT, body BLOB)")
    out += list(_MACROS)
    for name, cols in TABLES.items():
        out.append(f"CREATE TABLE store.{name}({', '.join(f'{c} {k}' for c, k in cols)})")
        out.append(
            f"CREATE VIEW main.{name} AS SELECT *{_VIEW_EXTRA.get(name, '')} FROM store.{name}"
        )
    return out


class _Meta(msgspec.Struct, frozen=True):
    version: int
    last_seq: int
    graph_seq: int
    first_ts: int


def _first_ts(log: EventLog) -> int:
    return next((r.ts for r in log.read(1, 1, light=True)), 0)


class _Damaged(Exception):
    """A store whose content contradicts itself (caught and rebuilt)."""


class AnalyticsStore:
    """The analytics store of one brain: catch it up, then query it.

    Args:
        path: the database file (by convention ``<brain>/cache/analytics.duckdb``).
        warn: receives warnings (a damaged, outdated or mismatched store rebuilt).

    Example:
        >>> with AnalyticsStore(path) as store:                       # doctest: +SKIP
        ...     store.catch_up(brain.log)
        ...     store.query("SELECT source, count(*) FROM outcomes GROUP BY ALL").rows
    """

    def __init__(self, path: str | Path, *, warn: Warn | None = None) -> None:
        self.path = Path(path)
        self.warn: Warn = warn or (lambda _msg: None)
        self._con: duckdb.DuckDBPyConnection | None = None
        self._read_only = True
        self._graph_seq = 0
        self.last_seq = 0
        """The seq the store holds everything up to (known after ``catch_up``)."""

    def __enter__(self) -> AnalyticsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (a writer's changes are checkpointed into the file)."""
        if self._con is not None:
            con, self._con = self._con, None
            try:
                con.close()
            except duckdb.Error as exc:
                raise AnalyticsError(_first_line(exc), self._delete_hint()) from exc

    @property
    def size_bytes(self) -> int:
        """The store's size on disk (database file and write-ahead log)."""
        wal = self.path.with_name(self.path.name + ".wal")
        return sum(p.stat().st_size for p in (self.path, wal) if p.exists())

    def _delete_hint(self) -> str:
        return f"delete {self.path}; it is derived from the log and rebuilt on the next use"

    # ------------------------------------------------------------ connections

    def _connect(self, *, read_only: bool) -> duckdb.DuckDBPyConnection:
        if self._con is not None and self._read_only == read_only:
            return self._con
        self.close()
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.Error as exc:
            if _is_lock(exc):
                raise _busy(self.path, exc) from exc
            raise
        self._read_only = read_only
        return self._con

    def _remove(self) -> None:
        self.close()
        for p in (self.path, self.path.with_name(self.path.name + ".wal")):
            p.unlink(missing_ok=True)

    def _peek(self) -> _Meta | None:
        """The meta row through a read-only connection, or None (missing or unreadable)."""
        if not self.path.exists():
            return None
        try:
            return _read_meta(self._connect(read_only=True))
        except (duckdb.Error, _Damaged):
            self.close()
            return None

    # ------------------------------------------------------------ catching up

    def catch_up(
        self,
        log: EventLog,
        *,
        to_seq: int | None = None,
        progress: Progress | None = None,
        chunk: int = CHUNK,
    ) -> int:
        """Fold the log's records after the store's seq (up to ``to_seq``, default the
        last) into it; return how many.

        A missing store is built; a damaged or mismatched one is rebuilt with a
        warning. Leaves a read-only connection open for ``query``.

        Raises:
            AnalyticsError: the store is in use by another process, or cannot be
                written (nothing is half-written: each commit holds a whole chunk).
        """
        first_ts = _first_ts(log)
        end = log.last_seq if to_seq is None else max(0, min(to_seq, log.last_seq))
        meta = self._peek()
        if (
            meta is not None
            and (meta.version, meta.first_ts) == (VERSION, first_ts)
            and end <= meta.last_seq <= log.last_seq
        ):
            self.last_seq = meta.last_seq  # up to date (or ahead of to_seq)
            return 0
        try:
            folded = self._fold_into(log, end, first_ts, progress, chunk)
        except (duckdb.Error, _Damaged) as exc:
            if _is_lock(exc):
                raise _busy(self.path, exc) from exc
            self.warn(f"analytics store {self.path} is unusable ({_first_line(exc)}); rebuilt")
            self._remove()
            try:
                folded = self._fold_into(log, end, first_ts, progress, chunk)
            except (duckdb.Error, _Damaged) as again:
                self.close()
                raise AnalyticsError(_first_line(again), self._delete_hint()) from again
        self.close()
        try:
            self._connect(read_only=True)
        except duckdb.Error as exc:
            raise AnalyticsError(_first_line(exc), self._delete_hint()) from exc
        return folded

    def _open_for_writing(self, first_ts: int, last_seq: int) -> _Meta:
        con = self._connect(read_only=False)
        meta = _read_meta(con)
        reason = ""
        if meta is None and _has_tables(con):
            reason = "holds no analytics meta"
        elif meta is not None and meta.version != VERSION:
            reason = f"has schema version {meta.version}, not {VERSION}"
        elif meta is not None and (meta.first_ts != first_ts or meta.last_seq > last_seq):
            reason = "was built from another log"
        if reason:
            self.warn(f"analytics store {self.path} {reason}; rebuilt from the log")
            self._remove()
            con = self._connect(read_only=False)
        if meta is None or reason:
            meta = _Meta(VERSION, 0, 0, first_ts)
            con.begin()
            for stmt in _schema_sql():
                con.execute(stmt)
            con.execute("INSERT INTO store.meta VALUES (?, 0, 0, ?)", [VERSION, first_ts])
            con.commit()
        return meta

    def _fold_into(
        self, log: EventLog, end: int, first_ts: int, progress: Progress | None, chunk: int
    ) -> int:
        meta = self._open_for_writing(first_ts, log.last_seq)
        con = self._connect(read_only=False)
        self.last_seq, self._graph_seq = meta.last_seq, meta.graph_seq
        if meta.last_seq >= end:
            return 0
        row = con.execute("SELECT op, seq FROM store.maintenance ORDER BY seq DESC LIMIT 1")
        last = row.fetchone()
        fold = RowFold(
            lambda: self._load_graph(con), (str(last[0]), int(last[1])) if last else ("", 0)
        )
        total, done = end - meta.last_seq, 0
        # the rows are millions of acyclic tuples: the cycle collector would rescan
        # them again and again (a third of the run) and can find nothing to free
        collecting = gc.isenabled()
        gc.disable()
        try:
            for rec in log.read(meta.last_seq + 1, end):
                fold.add(rec)
                if fold.count >= chunk:
                    done += self._flush(con, fold, rec.seq)
                    if progress is not None:
                        progress(done, total)
            if fold.count:
                done += self._flush(con, fold, end)
        finally:
            if collecting:
                gc.enable()
        if progress is not None:
            progress(done, total)
        return done

    def _load_graph(self, con: duckdb.DuckDBPyConnection) -> graph.State:
        row = con.execute("SELECT seq, body FROM store.graph").fetchone()
        if row is None:
            if self._graph_seq:
                raise _Damaged(f"the graph snapshot at seq {self._graph_seq} is missing")
            g = graph.initial()
        else:
            if int(row[0]) != self._graph_seq:
                raise _Damaged(f"graph snapshot at seq {row[0]}, meta says {self._graph_seq}")
            try:
                g = graph.restore(bytes(row[1]))
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise _Damaged(f"the graph snapshot does not decode: {exc}") from exc
        g.seq = self.last_seq  # no graph event lies between the snapshot and last_seq
        return g

    def _flush(self, con: duckdb.DuckDBPyConnection, fold: RowFold, seq: int) -> int:
        """Commit the fold's rows, the present of what they touched, and the new seq."""
        n = fold.count
        con.begin()
        try:
            _resolve_traces(con, fold)
            for name in HISTORY:
                _load(con, name, fold.rows[name], fold.groups.get(name))
            current = fold.current()
            _replace(con, "nodes", ("id",), sorted((i,) for i in fold.nodes_touched))
            _load(con, "nodes", current["nodes"])
            _replace(con, "edges", ("source", "target"), sorted(fold.edges_touched))
            _load(con, "edges", current["edges"])
            graph_seq = self._graph_seq
            if fold.graph_changed and fold.g is not None:
                graph_seq = seq
                con.execute("DELETE FROM store.graph")
                body = graph.snapshot(fold.g)
                con.execute("INSERT INTO store.graph VALUES (?, ?)", [seq, body])
            con.execute("UPDATE store.meta SET last_seq = ?, graph_seq = ?", [seq, graph_seq])
            con.commit()
        except BaseException:
            con.rollback()
            raise
        self.last_seq, self._graph_seq = seq, graph_seq
        fold.reset()
        return n

    # ------------------------------------------------------------ queries

    def query(self, sql: str, params: list[Any] | dict[str, Any] | None = None) -> QueryResult:
        """Run SQL on a read-only connection (``?`` or ``$name`` placeholders take ``params``).

        Raises:
            AnalyticsError: DuckDB refused the query (its message, a hint naming the fix).
        """
        try:
            con = self._connect(read_only=True)
            cur = con.execute(sql, params) if params is not None else con.execute(sql)
            desc = cur.description
            rows = cur.fetchall() if desc is not None else []
        except duckdb.Error as exc:
            raise AnalyticsError(_first_line(exc), _query_hint(exc, sql)) from exc
        if desc is None:
            return QueryResult([], [], [])
        return QueryResult([d[0] for d in desc], [str(d[1]) for d in desc], rows)


def _read_meta(con: duckdb.DuckDBPyConnection) -> _Meta | None:
    found = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'store' AND table_name = 'meta'"
    ).fetchone()
    if not found or not found[0]:
        return None
    rows = con.execute("SELECT version, last_seq, graph_seq, first_ts FROM store.meta").fetchall()
    if len(rows) != 1:
        raise _Damaged(f"store.meta holds {len(rows)} rows")
    return _Meta(*(int(v) for v in rows[0]))


def _has_tables(con: duckdb.DuckDBPyConnection) -> bool:
    row = con.execute("SELECT count(*) FROM duckdb_tables()").fetchone()
    return bool(row and row[0])


def _resolve_traces(con: duckdb.DuckDBPyConnection, fold: RowFold) -> None:
    """Fill the trace seq of outcomes whose trace was recorded before this run."""
    if not fold.unresolved:
        return
    rows = fold.rows["outcomes"]
    ids = sorted({str(rows[i][3]) for i in fold.unresolved})
    con.register("_ids", {"trace_id": _column(VARCHAR, tuple(ids))})
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


def _replace(
    con: duckdb.DuckDBPyConnection, table: str, keys: tuple[str, ...], rows: list[Any]
) -> None:
    """Delete the rows of ``table`` whose key is in ``rows`` (new values follow)."""
    if not rows:
        return
    kinds = dict(TABLES[table])
    data = {
        k: _column(kinds[k], vals) for k, vals in zip(keys, zip(*rows, strict=True), strict=True)
    }
    match = " AND ".join(f"store.{table}.{k} = _keys.{k}" for k in keys)
    con.register("_keys", data)
    try:
        con.execute(f"DELETE FROM store.{table} USING _keys WHERE {match}")
    finally:
        con.unregister("_keys")
