"""Builders shared by the diffing tests: file texts with their content hash, the
previous files of a graph, and folding diff events into a graph and viewing it."""

from __future__ import annotations

from ocb_events.schema import Event, Record
from projections import graph
from workspace_sync import FileText, PreviousChunk, PreviousFile, text_hash


def ft(path: str, text: str) -> FileText:
    return FileText(path, text, text_hash(text))


def previous(g: graph.State) -> dict[str, PreviousFile]:
    """What the differ needs of each file of ``g`` (as ``ocb.graph.sync.previous_files``)."""
    out = {}
    for p, e in g.files.items():
        nodes = [g.nodes[i] for i in e.chunks]
        chunks = [PreviousChunk(n.id, n.text_hash, n.text, n.heading) for n in nodes]
        out[p] = PreviousFile(e.content_hash, chunks, e.next_ordinal)
    return out


def apply(g: graph.State, events: list[Event]) -> graph.State:
    for ev in events:
        g = graph.evolve(g, Record(seq=g.seq + 1, ts=0, actor="sync", event=ev))  # type: ignore[arg-type]
    return g


def view(g: graph.State) -> list[tuple[str, int, int, int, str]]:
    return sorted((n.path, n.start_line, n.end_line, n.start_col, n.text) for n in g.nodes.values())
