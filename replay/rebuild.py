"""Folding the log into projections: full rebuilds and snapshot + tail loads."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from types import ModuleType
from typing import Any

from ocb_events.protocol import EventLog
from ocb_events.schema import FoldRecord, Record
from projections import config, graph, traces, vectors

PROJECTIONS: dict[str, ModuleType] = {
    "config": config,
    "graph": graph,
    "traces": traces,
    "vectors": vectors,
}
"""Every projection by name; each module exports State, initial, evolve, snapshot, restore."""

Progress = Callable[[int, int], None]


def fold(records: Iterable[Record | FoldRecord], states: dict[str, Any]) -> dict[str, Any]:
    """Fold ``records`` into ``states`` (consumed), skipping records a state already holds."""
    names = sorted(states)
    steps = [(i, PROJECTIONS[n].evolve) for i, n in enumerate(names)]
    current = [states[n] for n in names]
    starts = [st.seq for st in current]
    ahead = max(starts, default=0)  # past this seq every state takes every record
    for rec in records:
        if rec.seq > ahead:
            for i, evolve in steps:
                current[i] = evolve(current[i], rec)
        else:
            for i, evolve in steps:
                if rec.seq > starts[i]:
                    current[i] = evolve(current[i], rec)
    for n, st in zip(names, current, strict=True):
        states[n] = st
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
