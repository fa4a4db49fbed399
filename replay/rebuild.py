"""Folding the log into projections: full rebuilds from the first record. The registry
(``PROJECTIONS``, ``ROUTES``) and ``fold`` live in ``projections``; they are
re-exported here for the callers that import them from ``replay``.

A rebuild reads the log once, decoding only what the projections it folds read
(``replay.folding``). A rebuild of a long log (``SPLIT_FROM`` records or more, on a
machine with two cores or more) folds in two processes: as this one reads the log and
folds the other projections, it forwards the records the graph folds (a segment
log's as their payloads, not decoded here) to a second interpreter
(``replay.split``), which folds them in log order and hands back the
graph's snapshot bytes, restored here. The states are byte for byte those of one
process. A second process that cannot start, fails or answers wrongly leaves the graph
to this one (with a one-line warning when it failed), never a wrong state.

Both paths are held to the record fold by the tests (``tests/replay/test_rebuild.py``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from ocb_events.log import SegmentLog
from ocb_events.protocol import EventLog
from projections import PROJECTIONS, ROUTES, fold
from replay import split as split_process
from replay.folding import Tick, fold_fast, no_cycle_collection, read_for

__all__ = ["PROJECTIONS", "ROUTES", "Progress", "fold", "rebuild", "snapshot_bytes"]

Progress = Callable[[int, int], None]
Warn = Callable[[str], None]

SPLIT_FROM = 200_000
"""Records from which a rebuild folds in two processes by default. Below, the second
process's start (~0.4 s of imports) costs about what it saves: at 100,000 events of
the pg mix, ~0.75 cpu-s here and ~0.8 there (start included) against ~0.9 in one
process; at 300,000, ~2.2 and ~1.8 against ~3.0."""
AWAY = frozenset({"graph"})
"""The projections the second process folds. The graph's fold (its weight updates
above all) is about half of a rebuild's work besides the read, and its snapshot
restores lazily (~15 ms at 1,000,000 events, where the others take ~1.3 s, the trace
index most of it), so this process reads, folds the others and restores only the
graph."""


def rebuild(
    log: EventLog,
    names: Sequence[str] = tuple(PROJECTIONS),
    *,
    to_seq: int | None = None,
    progress: Progress | None = None,
    split: bool | None = None,
    warn: Warn | None = None,
) -> dict[str, Any]:
    """Fold the log from its first record (up to ``to_seq``) into fresh projections.

    Args:
        progress: called with (seq, end) as this process folds, and once at the end.
        split: fold the graph in a second process (with the graph and another
            projection to fold); by default, for a log of at least ``SPLIT_FROM``
            records on a machine with two cores or more; ``False`` folds everything
            here.
        warn: receives one line when the second process failed and its projections
            were folded here instead (by default, printed on stderr).
    """
    end = log.last_seq if to_seq is None else min(to_seq, log.last_seq)
    tick = _ticker(progress, end)
    names = sorted(names)
    states = {name: PROJECTIONS[name].initial() for name in names}
    away = [n for n in names if n in AWAY]
    here = [n for n in names if n not in AWAY]
    wanted = _pays(end) if split is None else split
    proc = split_process.start() if wanted and away and here and end else None
    with no_cycle_collection():
        if proc is None:
            fold_fast(read_for(log, names, 1, end), states, tick)
        else:
            _fold_split(log, proc, end, (here, away), states, tick, warn or _stderr)
    if progress is not None:
        progress(end, end)
    return states


def _fold_split(
    log: EventLog,
    proc: split_process.Child,
    end: int,
    parts: tuple[list[str], list[str]],
    states: dict[str, Any],
    tick: Tick | None,
    warn: Warn,
) -> None:
    """Fold the projections ``here`` while ``proc`` folds those ``away``, then restore
    these from its snapshots (or fold them here too when it failed)."""
    here, away = parts
    forward = split_process.forward_to(proc, split_process.Job(away, end))
    mine = {n: states[n] for n in here}
    try:
        if isinstance(log, SegmentLog):  # payloads forwarded as read, decoded there
            states.update(fold_fast(read_for(log, here, 1, end, forward.payloads), mine, tick))
        else:
            records = read_for(log, [*here, *away], 1, end)
            states.update(fold_fast(records, mine, tick, forward))
        forward.close()
        got = split_process.finish(proc, forward, away)
    except BaseException:  # interrupted, or a corrupt log: the second process too
        split_process.stop(proc)
        forward.close()
        raise
    if not isinstance(got, str):
        try:
            states.update({n: PROJECTIONS[n].restore(got.snapshots[n]) for n in away})
            return
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            got = f"its snapshots could not be read ({exc})"
    warn(f"the second process of a rebuild failed ({got}); folding here")
    _fold_part(log, away, end, states, None)


def _fold_part(
    log: EventLog, names: list[str], end: int, states: dict[str, Any], tick: Tick | None
) -> None:
    part = {n: states[n] for n in names}  # fold_fast folds every state it is given
    states.update(fold_fast(read_for(log, names, 1, end), part, tick))


def _pays(end: int) -> bool:
    """Whether two processes are the default: a long log and two cores."""
    return end >= SPLIT_FROM and _two_cores()


def _two_cores() -> bool:
    """Whether a second process may find a core of its own (two cores or more). The
    load is not asked, so the path does not depend on the machine's state: on a
    machine shared with other busy processes two processes went either way at
    1,000,000 events (17.7-18.7 s against 18.9-25.9 in one series, 12.2-16.4 against
    11.2-13.9 in another), at ~12 cpu-s in all against ~10 for one process."""
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    return cores >= 2


def _stderr(line: str) -> None:
    print(f"warning: {line}", file=sys.stderr)


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
