"""Folding the log into projections: full rebuilds and snapshot + tail loads."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from types import ModuleType
from typing import Any

from ocb_events.protocol import EventLog
from ocb_events.schema import Record
from projections import config, graph, traces, vectors

PROJECTIONS: dict[str, ModuleType] = {
    "config": config,
    "graph": graph,
    "traces": traces,
    "vectors": vectors,
}
"""Every projection by name; each module exports State, initial, evolve, snapshot, restore."""

Progress = Callable[[int, int], None]


def fold(records: Iterable[Record], states: dict[str, Any]) -> dict[str, Any]:
    """Fold ``records`` into ``states`` (consumed), skipping records a state already holds."""
    mods = [(name, PROJECTIONS[name].evolve) for name in sorted(states)]
    for rec in records:
        for name, evolve in mods:
            st = states[name]
            if rec.seq > st.seq:
                states[name] = evolve(st, rec)
    return states


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
        return fold(log.read(1, end), states)
    step = max(1, end // 100)

    def counted() -> Iterable[Record]:
        for rec in log.read(1, end):
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
