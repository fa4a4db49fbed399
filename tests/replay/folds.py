"""What the fold tests share: a clock for a test log, appends, and every projection's
snapshot bytes, folded record by record (the reference a faster fold must equal)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ocb_events.protocol import EventLog
from ocb_events.schema import Event
from projections import PROJECTIONS, fold

NAMES = sorted(PROJECTIONS)


def clock() -> Callable[[], int]:
    """A clock that ticks a millisecond a call."""
    ticks = iter(range(1, 10**9))
    return lambda: 1_000 * next(ticks)


def snapshots(states: dict[str, Any]) -> dict[str, bytes]:
    return {name: PROJECTIONS[name].snapshot(state) for name, state in states.items()}


def reference(log: EventLog, names: list[str] = NAMES, end: int | None = None) -> dict[str, bytes]:
    """The snapshots of ``names`` folded record by record up to ``end`` (the last)."""
    states = {n: PROJECTIONS[n].initial() for n in names}
    return snapshots(fold(log.read(1, end or log.last_seq, light=True), states))


def append(log: EventLog, batches: list[list[Event]]) -> None:
    for batch in batches:
        if batch:
            log.append(batch, actor="test")
