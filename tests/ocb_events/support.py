"""Helpers shared by the log tests: log factories, scripted clocks and file snapshots."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ocb_events.clock import Clock, TickClock
from ocb_events.log import SegmentLog
from ocb_events.memory import MemoryLog
from ocb_events.protocol import EventLog
from ocb_events.schema import ConfigChanged, Event

SMALL_SEGMENT = 512
"""A segment size that forces a rollover every few records."""


def config_events(n: int, prefix: str = "k") -> list[Event]:
    """``n`` small, distinct events."""
    return [ConfigChanged(key=f"{prefix}{i}", value=i) for i in range(n)]


class ScriptedClock:
    """A clock that returns whatever ``now`` is set to (it may go backwards)."""

    def __init__(self, now: int = 1_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def seg_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.seg"))


def snapshot(directory: Path) -> dict[str, bytes]:
    """The bytes of every segment file, by name."""
    return {p.name: p.read_bytes() for p in seg_files(directory)}


@dataclass
class LogMaker:
    """Opens fresh logs of one kind (``memory``, ``segment`` or ``postgres``) and closes them all
    at teardown."""

    kind: str
    root: Path
    segment_bytes: int = SMALL_SEGMENT
    pg: Any = None  # tests.pg_server.PgServer, for the postgres kind
    _count: int = field(default=0, repr=False)
    _open: list[EventLog] = field(default_factory=list, repr=False)

    @property
    def durable(self) -> bool:
        return self.kind == "segment"

    def new(self, clock: Clock | None = None, segment_bytes: int | None = None) -> EventLog:
        """A new, empty log (a fresh directory for the segment log)."""
        self._count += 1
        clock = clock or TickClock()
        log: EventLog
        if self.kind == "memory":
            log = MemoryLog(clock=clock)
        elif self.kind == "postgres":
            from ocb_events.pg import PostgresLog

            log = PostgresLog(self.pg.fresh_url(), clock=clock)
        else:
            log = SegmentLog(
                self.root / f"log-{self._count}",
                clock=clock,
                segment_bytes=segment_bytes or self.segment_bytes,
            )
        self._open.append(log)
        return log

    def reopen(self, log: EventLog, clock: Clock | None = None) -> SegmentLog:
        """Close a segment log and open its directory again as the writer."""
        assert isinstance(log, SegmentLog)
        log.close()
        self._open = [other for other in self._open if other is not log]
        again = SegmentLog(
            log.directory, clock=clock or TickClock(), segment_bytes=log.segment_bytes
        )
        self._open.append(again)
        return again

    def discard(self, log: EventLog) -> None:
        """Close a log and delete its files."""
        log.close()
        self._open = [other for other in self._open if other is not log]
        if isinstance(log, SegmentLog):
            shutil.rmtree(log.directory, ignore_errors=True)
        elif self.kind == "postgres":
            self.pg.sql(f'DROP SCHEMA "{log.target.schema}" CASCADE')  # type: ignore[attr-defined]

    def close_all(self) -> None:
        for log in self._open:
            log.close()
        self._open.clear()


def append_all(log: EventLog, batches: Sequence[Sequence[Event]], actor: str = "test") -> list:
    """Append each batch in turn; all returned records, in order."""
    out = []
    for batch in batches:
        out.extend(log.append(batch, actor=actor))
    return out


# The tags of the first storage format. Tags are the storage format: a tag may be
# added, never renamed or removed.
V1_TAGS = frozenset(
    {
        "workspace_attached",
        "file_indexed",
        "file_changed",
        "file_removed",
        "embedder_configured",
        "nodes_embedded",
        "edges_created",
        "edges_updated",
        "node_injected",
        "config_changed",
        "query_traced",
        "outcome_recorded",
    }
)
