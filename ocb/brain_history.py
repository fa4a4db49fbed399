"""The commands over a brain's whole history (``ocb.brain.Brain`` inherits them): SQL,
the canned report and the audits, each run on the analytics store caught up with the
log (``replay.analytics``) in worker processes within the ``sql.*`` limits.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

import msgspec

from ocb.settings import Sql
from ocb.store import Store

if TYPE_CHECKING:
    from replay.analytics import AnalyticsStore
    from replay.audit import EdgeAudit, NodeAudit
    from replay.history import CatchUp
    from replay.isolation import Running
    from replay.parquet import ParquetExport
    from replay.report import HistoryReport
    from replay.store_meta import QueryResult

__all__ = ["HistoryCommands"]

_QUERIES = threading.Lock()  # makes each brain's ``Running`` once


class HistoryCommands:
    """SQL, reports and audits over the history of ``self.store``."""

    store: Store

    _queries: Running | None = None

    @staticmethod
    def check_sql(statement: str) -> None:
        """Refuse SQL that ``sql`` refuses, before any brain is opened (InputError,
        AnalyticsError)."""
        from replay.statements import check_query

        check_query(statement)

    def sql(
        self,
        statement: str,
        params: list[Any] | None = None,
        **catch_up: Unpack[CatchUp],
    ) -> QueryResult:
        """Run one reading statement over the whole history (``replay.analytics``), in
        a worker process within the ``sql.*`` limits, its ``?`` placeholders taking
        ``params``; AnalyticsError (or InputError) when it is not a single read, fails,
        or goes over a limit."""
        with self._history(**catch_up) as store:
            return store.query(statement, params)

    def report(self, *, top: int = 10, **catch_up: Unpack[CatchUp]) -> HistoryReport:
        """Canned analytics over the whole history (``replay.report``)."""
        from replay.report import report

        with self._history(**catch_up) as store:
            return report(store, top=top)

    def audit_edge(self, source: str, target: str, **catch_up: Unpack[CatchUp]) -> EdgeAudit:
        """Every change of an edge's weight, with its cause (``replay.audit``);
        InputError for an unknown node or edge, naming close matches."""
        from replay.audit import audit_edge

        with self._history(**catch_up) as store:
            return audit_edge(store, source, target)

    def audit_node(self, node: str, *, limit: int = 20, **catch_up: Unpack[CatchUp]) -> NodeAudit:
        """A node's life, injections, weight changes and last ``limit`` accesses
        (``replay.audit``); InputError for an unknown node, naming close matches."""
        from replay.audit import audit_node

        with self._history(**catch_up) as store:
            return audit_node(store, node, limit=limit)

    def export_parquet(
        self, dest: Path, *, force: bool = False, **catch_up: Unpack[CatchUp]
    ) -> ParquetExport:
        """Write every view of the history as Parquet into ``dest``, partitioned by day,
        each row with this brain's id and name (``replay.parquet``); InputError for a
        directory that holds files but no export of this brain (unless ``force``)."""
        from replay.parquet import brain_id, check_dir, export_parquet

        with self.history_held():
            ident = brain_id(self.store.log)
        check_dir(dest, ident, force)  # before a catch-up that may take long
        name = self.store.path.resolve().name
        with self._history(**catch_up) as store:
            return export_parquet(store.path, dest, brain_id=ident, brain=name, force=force)

    def history_held(self) -> AbstractContextManager[None]:
        """Held while a command over the history reads the log and the settings: nothing
        here; a brain that others write beside (a daemon's) holds its gate."""
        return nullcontext()

    def queries(self) -> Running:
        """The worker processes of this brain's queries over the history."""
        from replay.isolation import Running

        with _QUERIES:
            if self._queries is None:
                self._queries = Running()
            return self._queries

    def interrupt_queries(self) -> None:
        """End every query over the history running for this brain (it fails with one
        line, its worker process killed) and refuse new ones: for a daemon that stops."""
        self.queries().stop()

    @contextmanager
    def _history(self, **catch_up: Unpack[CatchUp]) -> Iterator[AnalyticsStore]:
        """The analytics store caught up with the log (read under ``history_held``),
        its queries limited by the ``sql.*`` settings."""
        from replay.history import caught_up
        from replay.isolation import Limits

        with self.history_held():
            limits = Limits(**msgspec.structs.asdict(self.store.setting(Sql)))
        with caught_up(
            self.store.path,
            self.store.log,
            self.store.warn,
            held=self.history_held,
            limits=limits,
            running=self.queries(),
            **catch_up,
        ) as store:
            yield store
