"""Which events hold the texts nodes are embedded from (``ocb_events.texts``): every
chunk an event records, and an injected node; a new event type holding chunks fails
here until the map names it."""

from __future__ import annotations

import typing

from ocb_events import schema
from ocb_events.schema import (
    ChunkText,
    ConfigChanged,
    FileChanged,
    FileIndexed,
    NodeInjected,
    NodeSplit,
)
from ocb_events.texts import chunks_of, embedded_texts


def chunk(i: int, text: str, heading: str = "") -> ChunkText:
    return ChunkText(
        id=f"a.md::{i}", text=text, text_hash=f"h{i}", start_line=i, end_line=i, heading=heading
    )


A, B, C = chunk(0, "alpha", "# A"), chunk(1, "beta"), chunk(2, "gamma", "# C")


def test_the_chunks_and_injected_nodes_events_record_are_their_embedded_texts() -> None:
    indexed = FileIndexed(path="a.md", content_hash="x", chunks=(A, B))
    changed = FileChanged(path="a.md", content_hash="y", added=(C,), revised=(A,))
    split = NodeSplit(node_id="a.md::9", parts=(B, C), cause_seq=1)
    injected = NodeInjected(
        node_id="c1", node_type="CORRECTION", content="check the canary", anchor_query="deploy"
    )
    assert chunks_of(indexed) == (A, B) and chunks_of(changed) == (C, A)
    assert chunks_of(split) == (B, C) and chunks_of(injected) == ()
    assert embedded_texts(indexed) == [("a.md::0", ("alpha", "# A")), ("a.md::1", ("beta", ""))]
    assert embedded_texts(injected) == [("c1", ("check the canary", "deploy"))]
    assert embedded_texts(ConfigChanged(key="traversal.max_hops", value=2)) == []


def test_every_event_type_that_holds_chunks_is_named() -> None:
    holding = {
        cls
        for cls in typing.get_args(schema.AnyEvent)
        if any("ChunkText" in str(h) for h in typing.get_type_hints(cls).values())
    }
    assert holding == {FileIndexed, FileChanged, NodeSplit}, "name a new one in ocb_events.texts"
