"""The analytics store of a brain directory, caught up with its log: what ``sql``,
``report`` and ``audit`` read. Importing this module imports duckdb.

A brain that others write beside the reader (a daemon's) hands ``caught_up`` what to
hold while its log is read (``held``: the daemon's gate, shared). The log is then read
in slices of ``SLICE`` records, each under ``held`` and none longer, and nothing else
is done under it: waiting for other processes' queries, folding, writing the store and
the queries themselves run outside it, so they never hold up the writer, nor the
readers queued behind it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Literal, TypedDict, Unpack, overload

from ocb_events.schema import FoldRecord, Record
from replay.analytics import AnalyticsStore, Progress, Warn
from replay.isolation import Limits, Running
from replay.store_meta import History

ANALYTICS = Path("cache") / "analytics.duckdb"
"""The analytics store inside a brain directory (derived from the log; delete freely)."""
SLICE = 2_000
"""Records read from the log under ``held`` at a time."""

Held = Callable[[], AbstractContextManager[None]]


class CatchUp(TypedDict, total=False):
    """How a history command reports catching the analytics store up with the log."""

    progress: Progress | None
    """Told ``(done, total)`` while records are loaded."""
    waiting: Warn | None
    """Told each time the store is busy with another process and this one waits."""


class HeldLog:
    """A log read under ``held``, a slice at a time; reading stops (AnalyticsError)
    once ``running`` is stopped.

    Example:
        >>> view = HeldLog(brain.log, brain.gate.read, running)  # doctest: +SKIP
    """

    def __init__(self, log: History, held: Held, running: Running) -> None:
        self._log = log
        self._held = held
        self._running = running

    @property
    def last_seq(self) -> int:
        return self._log.last_seq

    def chain_of(self, seq: int) -> bytes | None:
        with self._held():
            return self._log.chain_of(seq)

    @overload
    def read(
        self, from_seq: int = ..., to_seq: int | None = ..., *, light: Literal[False] = ...
    ) -> Iterator[Record]: ...

    @overload
    def read(
        self, from_seq: int = ..., to_seq: int | None = ..., *, light: Literal[True]
    ) -> Iterator[Record | FoldRecord]: ...

    def read(
        self, from_seq: int = 1, to_seq: int | None = None, *, light: bool = False
    ) -> Iterator[Record | FoldRecord]:
        """Records from ``from_seq`` to ``to_seq`` (default: the last seq now)."""
        end = self._log.last_seq if to_seq is None else min(to_seq, self._log.last_seq)
        start = max(from_seq, 1)
        while start <= end:
            self._running.check()
            stop = min(start + SLICE - 1, end)
            with self._held():
                part: list[Record | FoldRecord] = (
                    list(self._log.read(start, stop, light=True))
                    if light
                    else list(self._log.read(start, stop))
                )
            yield from part
            start = stop + 1


@contextmanager
def caught_up(
    brain: Path,
    log: History,
    warn: Warn | None = None,
    *,
    held: Held = nullcontext,
    limits: Limits | None = None,
    running: Running | None = None,
    **catch_up: Unpack[CatchUp],
) -> Iterator[AnalyticsStore]:
    """The analytics store of the brain directory ``brain``, caught up with ``log``
    (read under ``held``), its queries run within ``limits`` by workers of ``running``.

    Other processes may read the store at the same time; one that has to catch it up
    waits for their queries (telling ``waiting``), and they wait for its catch-up.

    Raises:
        AnalyticsError: the store is busy past its wait, DuckDB failed, or ``running``
            was stopped.
    """
    store = AnalyticsStore(
        brain / ANALYTICS,
        warn=warn,
        waiting=catch_up.get("waiting"),
        limits=limits,
        running=running,
    )
    try:
        view = HeldLog(log, held, store.running)
        store.catch_up(view, progress=catch_up.get("progress"))
        yield store
    finally:
        store.close()
