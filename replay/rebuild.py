"""Folding the log into projections: full rebuilds from the first record. The registry
(``PROJECTIONS``, ``ROUTES``) and ``fold`` live in ``projections``; they are
re-exported here for the callers that import them from ``replay``.

A rebuild reads the log once, decoding only what the projections it folds read
(``replay.folding``). Asked to (``split=True``), a rebuild of a long segment log
(``SPLIT_FROM`` records or more) starts a second process that reads and decodes the
later part of the log (``replay.split``) while this one folds the earlier part, then
folds what it handed back; every record is still folded here, in log order. It is not
the default: on two shared cores it saved about 4 % of a rebuild at 1,000,000 events
for about 600 MiB more memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ocb_events.log import SegmentLog
from ocb_events.protocol import EventLog
from projections import PROJECTIONS, ROUTES, fold, fold_weights
from replay import split as split_process
from replay.folding import Tick, fold_fast, read_for

__all__ = ["PROJECTIONS", "ROUTES", "Progress", "fold", "rebuild", "snapshot_bytes"]

Progress = Callable[[int, int], None]

SPLIT_FROM = 200_000
"""Records from which a split rebuild starts a second process (below, starting one
costs more than it could save)."""
SHARE = 0.45
"""The share of the records a split rebuild reads itself: it folds the other process's
part too, after reading its own."""


def rebuild(
    log: EventLog,
    names: Sequence[str] = tuple(PROJECTIONS),
    *,
    to_seq: int | None = None,
    progress: Progress | None = None,
    split: bool = False,
) -> dict[str, Any]:
    """Fold the log from its first record (up to ``to_seq``) into fresh projections.

    Args:
        split: read and decode the later part of the log in a second process while
            this one folds the earlier part (a segment log of at least ``SPLIT_FROM``
            records; a shorter one, or another log, is read here).
    """
    end = log.last_seq if to_seq is None else min(to_seq, log.last_seq)
    tick = _ticker(progress, end)
    names = sorted(names)
    states = {name: PROJECTIONS[name].initial() for name in names}
    if split and end >= SPLIT_FROM and isinstance(log, SegmentLog):
        _split(log, names, end, states, tick)
    else:
        fold_fast(read_for(log, names, 1, end), states, tick)
    if progress is not None:
        progress(end, end)
    return states


def _split(
    log: SegmentLog, names: list[str], end: int, states: dict[str, Any], tick: Tick | None
) -> None:
    """Records up to ``SHARE`` of ``end`` read here, the others by a second process at
    the same time; all folded here, in order."""
    first = int(end * SHARE) + 1
    proc = split_process.start(log, names, first, end)
    if proc is None:  # no interpreter to start: read them all here
        fold_fast(read_for(log, names, 1, end), states, tick)
        return
    try:
        fold_fast(read_for(log, names, 1, first - 1), states, tick)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    got = split_process.finish(proc)
    if got is None:  # it could not (the log changed under it ...): read them here
        fold_fast(read_for(log, names, first, end), states, tick)
        return
    for item in got.items:
        if isinstance(item, split_process.Run):
            fold_weights(states["graph"], split_process.run_of(got.pairs, item))
        else:
            fold_fast(split_process.records_of(item), states)
    for state in states.values():
        state.seq = max(state.seq, end)


def _ticker(progress: Progress | None, end: int) -> Tick | None:
    if progress is None:
        return None
    step = max(1, end // 100)

    def tick(seq: int) -> None:
        if seq % step == 0:
            progress(seq, end)

    return tick


def snapshot_bytes(name: str, state: Any) -> bytes:
    """The canonical snapshot bytes of one projection's state."""
    data: bytes = PROJECTIONS[name].snapshot(state)
    return data
