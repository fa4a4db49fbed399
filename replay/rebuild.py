"""Folding the log into projections: full rebuilds from the first record. The registry
(``PROJECTIONS``, ``ROUTES``) and ``fold`` live in ``projections``; they are
re-exported here for the callers that import them from ``replay``.

A rebuild reads the log once, decoding only what the projections it folds read
(``replay.folding``). Asked to (``split=True``), it folds the graph here and every
other projection in a second process at the same time (each reads the whole log; the
other sends back snapshot bytes, which restore to equal states). That is off by
default: on the 1M-event history mix each process spends a third of its time reading
and checking frames, so the split cost more CPU than it saved in wall time on a shared
two-core machine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ocb_events.log import SegmentLog
from ocb_events.protocol import EventLog
from projections import PROJECTIONS, ROUTES, fold
from replay import split
from replay.folding import Tick, fold_fast, read_for

__all__ = ["PROJECTIONS", "ROUTES", "Progress", "fold", "rebuild", "snapshot_bytes"]

Progress = Callable[[int, int], None]

SPLIT_FROM = 200_000
"""Records from which a split rebuild starts a second process (below, starting one
costs more than it could save)."""


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
        split: fold the graph and the other projections in two processes (a segment
            log of at least ``SPLIT_FROM`` records; the module docstring says why this
            is off by default).
    """
    end = log.last_seq if to_seq is None else min(to_seq, log.last_seq)
    tick = _ticker(progress, end)
    names = sorted(names)
    others = [n for n in names if n != "graph"]
    if split and end >= SPLIT_FROM and isinstance(log, SegmentLog) and others and "graph" in names:
        states = _split(log, end, others, tick)
    else:
        states = _fold(log, names, end, tick)
    if progress is not None:
        progress(end, end)
    return states


def _fold(log: EventLog, names: list[str], end: int, tick: Tick | None) -> dict[str, Any]:
    states = {name: PROJECTIONS[name].initial() for name in names}
    return fold_fast(read_for(log, names, 1, end), states, tick)


def _split(log: SegmentLog, end: int, others: list[str], tick: Tick | None) -> dict[str, Any]:
    """The graph folded here, ``others`` in a second process at the same time."""
    proc = split.start(log, others, end)
    try:
        states = _fold(log, ["graph"], end, tick)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    folded = split.finish(proc)
    if folded is None:  # it could not (the log changed under it ...): fold them here
        folded = _fold(log, others, end, None)
    return {**states, **folded}


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
