"""The analytics store: a brain's history as DuckDB tables, derived from its log.

NOTE: with ``replay.statements`` (DuckDB's parser), ``replay.worker`` (the query
process, whose errors ``replay.isolation`` reads) and ``replay.parquet`` (the export),
the only module that opens DuckDB;
every ``duckdb.Error`` becomes an ``AnalyticsError`` here. The store is a cache
(``<brain>/cache/analytics.duckdb``), rebuilt from the log whenever it is deleted,
cannot be opened, holds another version's schema or does not match the log (with a
warning); it catches up from the seq it holds.

Layout: the rows live in tables of schema ``store``, loaded in bulk by
``replay.store_load`` (each flush hands DuckDB one dict of numpy columns per table and
runs one ``INSERT ... SELECT``); names of the big tables (``replay.tables.CODED``) are
INTEGER codes of one dictionary, ``store.ids``, appended with each flush's new names,
so DuckDB reads numbers, not Python strings; ``store.deltas`` is ordered by the edge's
codes within each flush. The documented interface is the views of the same names in
``main`` (README, "History: SQL and audit"), which join the names back. Weights
before and after each change are read from the graph projection, folded alongside the
rows with ``projections.graph.evolve`` and snapshotted into the store with every commit
that changed it, so ``deltas`` always agrees with the graph.

Connections are confined (``replay.confinement``): queries run read-only, one reading
statement at a time, in a worker process with a time, memory and result limit
(``replay.isolation``), while this process holds the store's lock. A lock file
(``replay.store_lock``) is shared by readers and exclusive while catching up: readers
never refuse each other; a process that must catch up waits (``WAIT_S``) for the
queries before it, re-reads the store's seq under the lock, and closes its read-write
connection before it queries.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import duckdb
import msgspec

from ocb_events.durable import FILE_MODE, private_dir
from ocb_events.errors import AnalyticsError
from projections import graph
from replay import confinement
from replay.audit_sql import CAUSES, causes_select
from replay.behind import Behind, batch_size
from replay.diff import Tiers
from replay.folding import no_cycle_collection
from replay.isolation import Limits, Running, Worker
from replay.rows import RowFold
from replay.statements import check_query
from replay.store_load import (
    KEY_PROBE,
    grouped_batches,
    load,
    load_grouped,
    replace,
    resolve_traces,
    store_names,
    tail_columns_of,
)
from replay.store_lock import StoreLock
from replay.store_meta import (
    History,
    Meta,
    QueryResult,
    chain_at,
    first_ts as first_ts_of,
    same_history,
)
from replay.tables import (
    APART,
    GROUPED,
    HISTORY,
    TABLES,
    heads_columns,
    store_columns,
    view_sql,
)
from replay.trace_rows import Names, read_rows
from replay.worker import first_line

VERSION = 10
"""The schema version; a store of another version is rebuilt."""

WAIT_S = 60.0
"""How long a process waits for others' queries or catch-up before it gives up."""

Warn = Callable[[str], None]
Progress = Callable[[int, int], None]
_T = Tiers()  # the default bounds; the tier rule of ``Tiers.of`` in SQL
_MACROS = (
    f"CREATE MACRO tier(w) AS CASE WHEN w IS NULL THEN NULL WHEN w <= {_T.inhibitory} "
    f"THEN 'inhibitory' WHEN w >= {_T.reflex} THEN 'reflex' WHEN w >= {_T.habitual} "
    "THEN 'habitual' ELSE 'dormant' END",
)
_VIEW_EXTRA = {"edges": ", tier(weight) AS tier"}


def _is_lock(exc: BaseException) -> bool:
    return isinstance(exc, duckdb.IOException) and "lock" in str(exc).lower()


def _busy(path: Path, exc: BaseException) -> AnalyticsError:
    return AnalyticsError(
        f"the analytics store {path} is in use by another process ({first_line(exc)})",
        "retry when that ocb command has finished",
    )


# --------------------------------------------------------------------------- confinement


_OPENING = threading.Lock()


def _open(path: str, *, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A connection that reaches nothing outside the database, with times in UTC (the
    catch-up one too: ``con.register`` of numpy columns needs no external access).

    A second connection to the same file in this process shares the first one's
    database, already confined and locked: it is taken as it is.
    """
    with _OPENING:
        con = duckdb.connect(path, read_only=read_only, config=dict(confinement.CONFIG))
        try:
            locked = con.execute("SELECT current_setting('lock_configuration')").fetchone()
            if not (locked and locked[0]):
                # ICU's setting, so the config cannot name it at connect; GLOBAL, so the
                # database's later connections have it too
                con.execute("SET GLOBAL TimeZone = 'UTC'")
                con.execute("SET lock_configuration = true")
        except BaseException:
            con.close()
            raise
    return con


_RUNNING = Running()
"""The workers of stores opened without a ``Running`` of their own."""


# --------------------------------------------------------------------------- schema


def _schema_sql() -> list[str]:
    out = ["CREATE SCHEMA store"]
    out.append(
        "CREATE TABLE store.meta(version INTEGER, last_seq BIGINT, graph_seq BIGINT, "
        "first_ts BIGINT, chain VARCHAR, probe UBIGINT)"
    )
    out.append("CREATE TABLE store.graph(seq BIGINT, body BLOB)")
    out.append("CREATE TABLE store.paths(seq BIGINT, path VARCHAR[])")
    out.append("CREATE TABLE store.ids(id INTEGER, name VARCHAR)")
    out += list(_MACROS)
    for name, cols in TABLES.items():
        stored = store_columns(name)
        out.append(f"CREATE TABLE store.{name}({', '.join(f'{c} {k}' for c, k in stored)})")
        if name in APART:
            heads = ", ".join(f"{c} {k}" for c, k in heads_columns(name))
            out.append(f"CREATE TABLE store.{APART[name]}({heads})")
        if stored != cols:
            out.append(f"CREATE VIEW main.{name} AS {view_sql(name)}")
            continue
        names = ", ".join(c for c, _ in cols)
        out.append(
            f"CREATE VIEW main.{name} AS SELECT {names}{_VIEW_EXTRA.get(name, '')} "
            f"FROM store.{name}"
        )
    none = "(SELECT NULL::BIGINT AS cause_seq) WHERE false"
    out.append(f"CREATE TABLE store.causes AS {causes_select(none)}")
    return out


class _Damaged(Exception):
    """A store whose content contradicts itself (caught and rebuilt)."""


class AnalyticsStore:
    """The analytics store of one brain: catch it up, then query it.

    Args:
        path: the database file (by convention ``<brain>/cache/analytics.duckdb``).
        warn: receives warnings (a damaged, outdated or mismatched store rebuilt).
        wait_s: how long to wait for other processes' queries or catch-up.
        waiting: told once each time the store is busy and this process waits.
        limits: what one query may take (time, memory, threads, result size).
        running: the worker processes its queries run in belong to this (stopping it
            ends them); by default, this process's.
        bulk: gather weight updates a source at a time (False: row by row, the
            reference the bulk path is tested against; the same rows either way).

    Example:
        >>> with AnalyticsStore(path) as store:                       # doctest: +SKIP
        ...     store.catch_up(brain.log)
        ...     store.query("SELECT source, count(*) FROM outcomes GROUP BY ALL").rows
    """

    def __init__(
        self,
        path: str | Path,
        *,
        warn: Warn | None = None,
        wait_s: float = WAIT_S,
        waiting: Warn | None = None,
        limits: Limits | None = None,
        running: Running | None = None,
        bulk: bool = True,
    ) -> None:
        self.path = Path(path)
        self.bulk = bulk
        self.warn: Warn = warn or (lambda _msg: None)
        self.wait_s = wait_s
        self.waiting: Warn = waiting or (lambda _msg: None)
        self.limits = limits or Limits()
        self.running = running or _RUNNING
        self._lock = StoreLock(self.path.with_name(self.path.name + ".lock"))
        self._con: duckdb.DuckDBPyConnection | None = None
        self._worker: Worker | None = None
        self._read_only = True
        self._graph_seq = 0
        self.last_seq = 0
        """The seq the store holds everything up to (known after ``catch_up``)."""

    def __enter__(self) -> AnalyticsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (a writer's changes are checkpointed into the file) and
        release the lock on the store."""
        try:
            self._disconnect()
        finally:
            self._lock.close()

    def _disconnect(self) -> None:
        """Close the worker's connection and this process's (the lock is released
        after both)."""
        if self._worker is not None:
            worker, self._worker = self._worker, None
            worker.close()
        if self._con is not None:
            con, self._con = self._con, None
            try:
                con.close()
            except duckdb.Error as exc:
                raise AnalyticsError(first_line(exc), self._delete_hint()) from exc

    @property
    def size_bytes(self) -> int:
        """The store's size on disk (database file and write-ahead log)."""
        wal = self.path.with_name(self.path.name + ".wal")
        return sum(p.stat().st_size for p in (self.path, wal) if p.exists())

    def _delete_hint(self) -> str:
        return f"delete {self.path}; it is derived from the log and rebuilt on the next use"

    # ------------------------------------------------------------ connections

    def _hold(self, mode: Literal["shared", "exclusive"]) -> None:
        """Hold the store's lock in ``mode`` (closing the connection first), waiting for
        other processes up to ``wait_s``."""
        self._disconnect()
        if mode == "shared":
            what = f"another process to finish catching up the analytics store {self.path}"
        else:
            what = f"other processes' queries on the analytics store {self.path} to finish"
        notice = f"waiting for {what} (up to {self.wait_s:g} s)"
        if not self._lock.acquire(mode, wait_s=self.wait_s, on_wait=lambda: self.waiting(notice)):
            raise AnalyticsError(
                f"waited {self.wait_s:g} s for {what}",
                "retry when those ocb commands have finished",
            )

    def _connect(self, *, read_only: bool) -> duckdb.DuckDBPyConnection:
        if self._con is not None and self._read_only == read_only:
            return self._con
        self._disconnect()
        needed: Literal["shared", "exclusive"] = "shared" if read_only else "exclusive"
        if self._lock.mode not in (needed, "exclusive"):
            self._hold(needed)
        if not read_only:
            private_dir(self.path.parent)
        try:
            self._con = _open(str(self.path), read_only=read_only)
        except duckdb.Error as exc:
            if _is_lock(exc):
                raise _busy(self.path, exc) from exc
            raise
        if not read_only:
            os.chmod(self.path, FILE_MODE)  # DuckDB makes its files as the umask says
        self._read_only = read_only
        return self._con

    def _remove(self) -> None:
        self._disconnect()
        for p in (self.path, self.path.with_name(self.path.name + ".wal")):
            p.unlink(missing_ok=True)

    def _peek(self) -> Meta | None:
        """The meta row through a read-only connection, or None (missing or unreadable)."""
        if not self.path.exists():
            return None
        try:
            return _read_meta(self._connect(read_only=True))
        except (duckdb.Error, _Damaged):
            self._disconnect()
            return None

    # ------------------------------------------------------------ catching up

    def catch_up(
        self,
        log: History,
        *,
        to_seq: int | None = None,
        progress: Progress | None = None,
        chunk: int | None = None,
    ) -> int:
        """Fold the log's records after the store's seq (up to ``to_seq``, default the
        last) into it, ``chunk`` records a commit (default: ``batch_size``); return
        how many.

        A missing store is built; a damaged or mismatched one is rebuilt with a
        warning. Waits for other processes' queries or catch-up. Leaves the store
        locked shared until ``close``, with no connection of this process open (a
        query opens the worker's).

        Raises:
            AnalyticsError: other processes held the store past ``wait_s``, or it
                cannot be written (nothing is half-written: each commit holds a whole
                chunk).
        """
        first_ts = first_ts_of(log)
        end = log.last_seq if to_seq is None else max(0, min(to_seq, log.last_seq))
        self._hold("shared")
        try:
            if self._holds(self._peek(), first_ts, end, log):
                self._disconnect()
                return 0
            self._hold("exclusive")  # then the store's seq is read again, by the writer
            folded = self._fold_safely(log, end, first_ts, progress, chunk)
            self._hold("shared")  # the read-write connection is closed first
            if not self._holds(self._peek(), first_ts, end, log):
                raise AnalyticsError(
                    f"the analytics store {self.path} cannot be read after catching up",
                    self._delete_hint(),
                )
            self._disconnect()
        except BaseException:
            self.close()
            raise
        return folded

    def _holds(self, meta: Meta | None, first_ts: int, end: int, log: History) -> bool:
        """Whether the store holds this log's records up to ``end`` (and take its seq).

        NOTE: a store ahead of this process's view of the same log is trusted: a process
        that opened the log after more appends caught it up (rebuilding would race it).
        """
        if meta is None or (meta.version, meta.first_ts) != (VERSION, first_ts):
            return False
        if not meta.same_keys:
            return False
        if meta.last_seq < end or not same_history(meta, log):
            return False
        self.last_seq = meta.last_seq
        return True

    def _fold_safely(
        self, log: History, end: int, first_ts: int, progress: Progress | None, chunk: int | None
    ) -> int:
        """Fold into the store, or rebuild it with a warning when it is unusable."""
        try:
            return self._fold_into(log, end, first_ts, progress, chunk)
        except (duckdb.Error, _Damaged) as exc:
            if _is_lock(exc):
                raise _busy(self.path, exc) from exc
            self.warn(f"analytics store {self.path} is unusable ({first_line(exc)}); rebuilt")
            self._remove()
            try:
                return self._fold_into(log, end, first_ts, progress, chunk)
            except (duckdb.Error, _Damaged) as again:
                raise AnalyticsError(first_line(again), self._delete_hint()) from again

    def _open_for_writing(self, first_ts: int, log: History) -> Meta:
        con = self._connect(read_only=False)
        meta = _read_meta(con)
        reason = ""
        if meta is None and _has_tables(con):
            reason = "holds no analytics meta"
        elif meta is not None and meta.version != VERSION:
            reason = f"has schema version {meta.version}, not {VERSION}"
        elif meta is not None and not meta.same_keys:
            reason = "keys its edges with another DuckDB's hash"
        elif meta is not None and meta.first_ts != first_ts:
            reason = "was built from another log"  # (one ahead of this log: see _holds)
        elif meta is not None and not same_history(meta, log):
            reason = "was built from another history (the log was repaired or restored)"
        if reason:
            self.warn(f"analytics store {self.path} {reason}; rebuilt from the log")
            self._remove()
            con = self._connect(read_only=False)
        if meta is None or reason:
            meta = Meta(VERSION, 0, 0, first_ts, chain_at(log, 0))
            con.begin()
            for stmt in _schema_sql():
                con.execute(stmt)
            con.execute(
                "INSERT INTO store.meta VALUES (?, 0, 0, ?, ?, hash(?))",
                [VERSION, first_ts, meta.chain, KEY_PROBE],
            )
            con.commit()
        return meta

    def _fold_into(
        self, log: History, end: int, first_ts: int, progress: Progress | None, chunk: int | None
    ) -> int:
        meta = self._open_for_writing(first_ts, log)
        con = self._connect(read_only=False)
        self.last_seq, self._graph_seq = meta.last_seq, meta.graph_seq
        if meta.last_seq >= end:  # another process caught it up while we waited
            return 0
        row = con.execute("SELECT op, seq FROM store.maintenance ORDER BY seq DESC LIMIT 1")
        last = row.fetchone()
        known = con.execute("SELECT name FROM store.ids ORDER BY id").fetchall()
        names = Names([str(r[0]) for r in known])
        fold = RowFold(
            lambda: self._load_graph(con),
            (str(last[0]), int(last[1])) if last else ("", 0),
            bulk=self.bulk,
            names=names,
        )
        total, done = end - meta.last_seq, 0
        chunk = batch_size(total) if chunk is None else chunk
        # the rows are millions of acyclic tuples: the cycle collector would rescan
        # them again and again (a third of the run) and can find nothing to free
        bg = Behind()
        with no_cycle_collection():
            try:
                for rec in read_rows(log, meta.last_seq + 1, end, packed=self.bulk):
                    fold.add(rec)
                    if fold.count >= chunk:
                        done += self._flush(con, fold, rec.seq, chain_at(log, rec.seq), bg)
                        if progress is not None:
                            progress(done, total)
                if fold.count:
                    done += self._flush(con, fold, end, chain_at(log, end), bg)
                bg.wait()
            finally:
                bg.drain()
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

    def _flush(
        self, con: duckdb.DuckDBPyConnection, fold: RowFold, seq: int, chain: str, bg: Behind
    ) -> int:
        """Hand the fold's rows, the present of what they touched and the new seq to
        ``bg`` to commit (after the flush before them) while the fold goes on; the
        traces' rows are built here, while the flush before them is committed."""
        n = fold.count
        fold.settle()
        current = fold.current()
        body = graph.snapshot(fold.g) if fold.graph_changed and fold.g is not None else None
        tails = tail_columns_of(fold)
        fold.trace_rows.tables()  # (here: the commit thread has DuckDB's share to do)
        batch = copy.copy(fold)  # its rows: ``reset`` gives the fold new ones
        fold.reset()
        bg.wait()
        bg.start(lambda: self._commit(con, batch, tails, current, body, seq, chain))
        return n

    def _commit(
        self,
        con: duckdb.DuckDBPyConnection,
        batch: RowFold,
        tails: dict[str, dict[str, Any]],
        current: dict[str, list[tuple[Any, ...]]],
        body: bytes | None,
        seq: int,
        chain: str,
    ) -> None:
        con.begin()
        stored = batch.names.stored
        try:
            resolve_traces(con, batch)
            built = {name: grouped_batches(batch, name, tails) for name in GROUPED}
            store_names(con, batch.names)  # every name the rows' codes stand for
            for name in HISTORY:
                if name in GROUPED:
                    load_grouped(con, name, built[name])
                else:
                    load(con, name, batch.rows[name])
            con.execute(CAUSES, {"from": self.last_seq + 1, "to": seq})
            replace(con, "nodes", ("id",), sorted((i,) for i in batch.nodes_touched))
            load(con, "nodes", current["nodes"])
            replace(con, "edges", ("source",), sorted((s,) for s in batch.sources_touched))
            load(con, "edges", current["edges"])
            graph_seq = self._graph_seq
            if body is not None:
                graph_seq = seq
                con.execute("DELETE FROM store.graph")
                con.execute("INSERT INTO store.graph VALUES (?, ?)", [seq, body])
            con.execute(
                "UPDATE store.meta SET last_seq = ?, graph_seq = ?, chain = ?",
                [seq, graph_seq, chain],
            )
            con.commit()
        except BaseException:
            con.rollback()
            batch.names.stored = stored
            raise
        self.last_seq, self._graph_seq = seq, graph_seq

    # ------------------------------------------------------------ queries

    def query(self, sql: str, params: list[Any] | dict[str, Any] | None = None) -> QueryResult:
        """Run one reading statement in the store's worker process, within ``limits``
        (``?`` or ``$name`` placeholders take ``params``); zoned times come back as
        ``datetime`` in UTC.

        Raises:
            InputError: no statement (empty, only comments or ';').
            AnalyticsError: what ``check_query`` refuses, file access, the query's time,
                memory or result limit, the brain closing (``running`` stopped), or
                another error from DuckDB (its first line, a hint naming the fix).
        """
        check_query(sql)
        if self._worker is None:
            self._disconnect()  # one connection to the store at a time: the worker's
            if self._lock.mode not in ("shared", "exclusive"):
                self._hold("shared")
            self._worker = Worker(self.path, self.limits, self.running)
        try:
            return self._worker.query(sql, params)
        finally:
            if not self._worker.sound:  # killed, or holding what it took: the next
                self._disconnect()  # query gets a fresh one


def _read_meta(con: duckdb.DuckDBPyConnection) -> Meta | None:
    found = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'store' AND table_name = 'meta'"
    ).fetchone()
    if not found or not found[0]:
        return None
    cols = {str(r[0]) for r in con.execute("DESCRIBE store.meta").fetchall()}
    if "probe" not in cols:  # a store of an older version, rebuilt by the caller
        row = con.execute("SELECT version FROM store.meta LIMIT 1").fetchone()
        return Meta(int(row[0]) if row else 0, 0, 0, 0)
    rows = con.execute(
        "SELECT version, last_seq, graph_seq, first_ts, chain, probe IS NOT DISTINCT FROM "
        "hash(?) FROM store.meta",
        [KEY_PROBE],
    ).fetchall()
    if len(rows) != 1:
        raise _Damaged(f"store.meta holds {len(rows)} rows")
    v, last, graph_seq, first, chain, same_keys = rows[0]
    return Meta(int(v), int(last), int(graph_seq), int(first), str(chain or ""), bool(same_keys))


def _has_tables(con: duckdb.DuckDBPyConnection) -> bool:
    row = con.execute("SELECT count(*) FROM duckdb_tables()").fetchone()
    return bool(row and row[0])
