"""Which events hold the texts that nodes are embedded from: a fact about the event
types, kept beside the schema so that a new event holding such a text is added here
once (``ocb forget`` embeds again every node whose text it erases, and the sync embeds
the chunks it records).

* ``file_indexed``: its chunks; ``file_changed``: its added and revised chunks;
  ``node_split``: its parts (each a chunk: heading and text);
* ``node_injected``: the injected node (its content and its anchor query).

Every other event holds no embedded text."""

from __future__ import annotations

from ocb_events.schema import ChunkText, Event, FileChanged, FileIndexed, NodeInjected, NodeSplit

__all__ = ["chunks_of", "embedded_texts"]


def chunks_of(ev: Event) -> tuple[ChunkText, ...]:
    """The chunks whose text ``ev`` records (none for an event that records none)."""
    if isinstance(ev, FileIndexed):
        return ev.chunks
    if isinstance(ev, FileChanged):
        return (*ev.added, *ev.revised)
    if isinstance(ev, NodeSplit):
        return ev.parts
    return ()


def embedded_texts(ev: Event) -> list[tuple[str, tuple[str, ...]]]:
    """(node id, the strings its vector is embedded from) of every node whose text
    ``ev`` records, in the event's order: a chunk's text and heading, an injected
    node's content and anchor query."""
    if isinstance(ev, NodeInjected):
        return [(ev.node_id, (ev.content, ev.anchor_query))]
    return [(c.id, (c.text, c.heading)) for c in chunks_of(ev)]
