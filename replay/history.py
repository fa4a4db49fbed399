"""The analytics store of a brain directory, caught up with its log: what ``sql``,
``report`` and ``audit`` read. Importing this module imports duckdb."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypedDict, Unpack

from ocb_events.protocol import EventLog
from replay.analytics import AnalyticsStore, Progress, Warn

ANALYTICS = Path("cache") / "analytics.duckdb"
"""The analytics store inside a brain directory (derived from the log; delete freely)."""


class CatchUp(TypedDict, total=False):
    """How a history command reports catching the analytics store up with the log."""

    progress: Progress | None
    """Told ``(done, total)`` while records are loaded."""
    waiting: Warn | None
    """Told each time the store is busy with another process and this one waits."""


@contextmanager
def caught_up(
    brain: Path, log: EventLog, warn: Warn | None = None, **catch_up: Unpack[CatchUp]
) -> Iterator[AnalyticsStore]:
    """The analytics store of the brain directory ``brain``, caught up with ``log``.

    Other processes may read the store at the same time; one that has to catch it up
    waits for their queries (telling ``waiting``), and they wait for its catch-up.

    Raises:
        AnalyticsError: the store is busy past its wait, or DuckDB failed.
    """
    store = AnalyticsStore(brain / ANALYTICS, warn=warn, waiting=catch_up.get("waiting"))
    try:
        store.catch_up(log, progress=catch_up.get("progress"))
        yield store
    finally:
        store.close()
