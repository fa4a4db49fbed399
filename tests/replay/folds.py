"""What the fold tests share: a clock for a test log, appends, a small graph, and every
projection's snapshot bytes, folded record by record (the reference a faster fold must
equal)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ocb_events.protocol import EventLog
from ocb_events.schema import ChunkText, EdgesCreated, EdgeSpec, Event, FileIndexed
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


def chunk_graph(nodes: list[str], *, into_last: bool = True) -> list[Event]:
    """A file of ``nodes`` as chunks and a sibling edge of weight 0 from each to every
    other (``into_last=False``: none into the last node)."""
    chunks = tuple(
        ChunkText(id=n, text=f"t{i}", text_hash=f"h{i}", start_line=i + 1, end_line=i + 1)
        for i, n in enumerate(nodes)
    )
    edges = tuple(
        EdgeSpec(source=s, target=t, weight=0.0, kind="sibling")
        for s in nodes
        for t in nodes
        if s != t and (into_last or t != nodes[-1])
    )
    return [FileIndexed(path="n.md", content_hash="c", chunks=chunks), EdgesCreated(edges=edges)]
