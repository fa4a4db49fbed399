"""Small hand-built graphs for traversal and learning tests, folded from real events."""

from __future__ import annotations

from ocb_events.schema import ChunkText, EdgesCreated, EdgeSpec, Event, FileIndexed, Record
from projections import graph


def build(nodes: dict[str, str], edges: list[tuple[str, str, float]]) -> graph.State:
    """A graph whose node ids are the keys of ``nodes`` (text as values)."""
    chunks = tuple(
        ChunkText(id=n, text=t, text_hash=n, start_line=i + 1, end_line=i + 1)
        for i, (n, t) in enumerate(nodes.items())
    )
    events: list[Event] = [FileIndexed(path="g.md", content_hash="h", chunks=chunks)]
    events.append(
        EdgesCreated(
            edges=tuple(EdgeSpec(source=a, target=b, weight=w, kind="test") for a, b, w in edges)
        )
    )
    state = graph.initial()
    for i, ev in enumerate(events, 1):
        state = graph.evolve(state, Record(seq=i, ts=i, actor="test", event=ev))  # type: ignore[arg-type]
    return state
