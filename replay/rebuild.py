"""Folding the log into projections: full rebuilds from the first record. The registry
(``PROJECTIONS``, ``ROUTES``) and ``fold`` live in ``projections``; they are
re-exported here for the callers that import them from ``replay``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ocb_events.protocol import EventLog
from ocb_events.schema import FoldRecord, Record
from projections import PROJECTIONS, ROUTES, fold

__all__ = ["PROJECTIONS", "ROUTES", "Progress", "fold", "rebuild", "snapshot_bytes"]

Progress = Callable[[int, int], None]


def rebuild(
    log: EventLog,
    names: Sequence[str] = tuple(PROJECTIONS),
    *,
    to_seq: int | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Fold the log from its first record (up to ``to_seq``) into fresh projections."""
    states = {name: PROJECTIONS[name].initial() for name in names}
    end = log.last_seq if to_seq is None else min(to_seq, log.last_seq)
    if progress is None:
        return fold(log.read(1, end, light=True), states)
    step = max(1, end // 100)

    def counted() -> Iterable[Record | FoldRecord]:
        for rec in log.read(1, end, light=True):
            if rec.seq % step == 0:
                progress(rec.seq, end)
            yield rec

    states = fold(counted(), states)
    progress(end, end)
    return states


def snapshot_bytes(name: str, state: Any) -> bytes:
    """The canonical snapshot bytes of one projection's state."""
    data: bytes = PROJECTIONS[name].snapshot(state)
    return data
