"""The graph fold of chunk identity: a revised chunk keeps its node (edges, weights,
authority) with its new text; a moved file keeps its ids, its chunks cite the new path
(aliases and their survivors' citations too), and its authority goes with it."""

from __future__ import annotations

from ocb_events.schema import (
    AuthoritySet,
    ChunkSpan,
    ChunkText,
    EdgeDeltas,
    EdgesCreated,
    EdgeSpec,
    EdgesUpdated,
    Event,
    FileChanged,
    FileIndexed,
    FileMoved,
    NodesMerged,
)
from projections import graph
from tests.projections.streams import as_records


def chunk(node_id: str, text: str, line: int, heading: str = "") -> ChunkText:
    return ChunkText(
        id=node_id,
        text=text,
        text_hash=f"h-{text}",
        start_line=line,
        end_line=line,
        heading=heading,
    )


def fold(evs: list[Event]) -> graph.State:
    g = graph.initial()
    for rec in as_records(evs):
        g = graph.evolve(g, rec)
    return g


BASE: list[Event] = [
    FileIndexed(
        path="a.md",
        content_hash="ca",
        chunks=(chunk("a.md::0", "one", 1), chunk("a.md::1", "two", 3)),
    ),
    FileIndexed(path="b.md", content_hash="cb", chunks=(chunk("b.md::0", "three", 1),)),
    EdgesCreated(
        edges=(
            EdgeSpec(source="a.md::0", target="b.md::0", weight=0.3, kind="similar"),
            EdgeSpec(source="b.md::0", target="a.md::0", weight=0.3, kind="similar"),
        )
    ),
    EdgesUpdated(
        updates=(EdgeDeltas(source="a.md::0", targets=("b.md::0",), deltas=(0.25,)),),
        rule="pg",
        cause_seq=3,
    ),
    AuthoritySet(authority="canonical", path="a.md"),
]


def test_a_revised_chunk_keeps_its_node_edges_weights_and_authority() -> None:
    before = fold(BASE)
    node = before.nodes["a.md::0"]
    revised = chunk("a.md::0", "one more", 2, heading="Top")
    kept = ChunkSpan(id="a.md::1", text_hash="h-two", start_line=4, end_line=4)
    changed = FileChanged(path="a.md", content_hash="ca2", kept=(kept,), revised=(revised,))
    g = fold([*BASE, changed])
    now = g.nodes["a.md::0"]
    assert (now.text, now.text_hash, now.start_line, now.heading) == (
        "one more",
        "h-one more",
        2,
        "Top",
    )
    assert (
        (now.authority, now.created_seq) == (node.authority, node.created_seq) == ("canonical", 1)
    )
    assert g.out["a.md::0"]["b.md::0"].weight == before.out["a.md::0"]["b.md::0"].weight == 0.55
    assert g.files["a.md"].chunks == ("a.md::0", "a.md::1") and g.nodes_seq == len(BASE) + 1


def test_a_moved_file_keeps_its_ids_edges_and_authority_and_cites_its_new_path() -> None:
    merged = NodesMerged(kept="b.md::0", absorbed="a.md::1", cause_seq=5)
    g = fold([*BASE, merged])
    assert g.nodes["b.md::0"].also == ("a.md#L3-L3",)
    g = fold([*BASE, merged, FileMoved(old_path="a.md", path="notes/a.md", content_hash="ca")])
    assert "a.md" not in g.files and g.files["notes/a.md"] == graph.FileEntry(
        "ca", ("a.md::0", "a.md::1"), 2
    )
    assert g.nodes["a.md::0"].source == "notes/a.md#L1-L1"
    assert g.nodes["b.md::0"].also == ("notes/a.md#L3-L3",) and g.merged == {"a.md::1": "b.md::0"}
    assert g.out["a.md::0"]["b.md::0"].weight == 0.55
    assert g.file_authority["notes/a.md"] == "canonical"
    # a chunk added to the moved file later takes the file's authority and its next ordinal
    more = FileChanged(
        path="notes/a.md", content_hash="c3", added=(chunk("notes/a.md::2", "new", 5),)
    )
    g = fold(
        [*BASE, merged, FileMoved(old_path="a.md", path="notes/a.md", content_hash="ca"), more]
    )
    assert g.nodes["notes/a.md::2"].authority == "canonical"


def test_a_move_onto_a_file_replaces_it_and_a_stale_file_stays_stale() -> None:
    g = fold([*BASE, FileMoved(old_path="a.md", path="b.md", content_hash="ca")])
    assert sorted(g.files) == ["b.md"] and "b.md::0" not in g.nodes
    assert g.files["b.md"].chunks == ("a.md::0", "a.md::1") and not g.out
    merged = NodesMerged(kept="a.md::0", absorbed="b.md::0", cause_seq=5)
    stale = fold([*BASE, merged, FileMoved(old_path="b.md", path="a.md", content_hash="cb")])
    # the replaced file held the survivor of the moved file's alias: both go, and the
    # moved file is stale (the next sync reads it again and indexes its text)
    assert sorted(stale.files) == ["a.md"] and stale.files["a.md"].content_hash == ""
    assert stale.files["a.md"].chunks == ()


def test_a_revised_alias_is_a_chunk_again_and_its_survivor_stops_citing_it() -> None:
    merged = NodesMerged(kept="b.md::0", absorbed="a.md::1", cause_seq=5)
    revised = FileChanged(path="a.md", content_hash="c2", revised=(chunk("a.md::1", "two too", 3),))
    g = fold([*BASE, merged, revised])
    assert g.nodes["a.md::1"].text == "two too" and "a.md::1" not in g.merged
    assert g.nodes["b.md::0"].also == ()


def test_a_survivor_revised_to_another_text_lets_its_aliases_go() -> None:
    merged = NodesMerged(kept="b.md::0", absorbed="a.md::1", cause_seq=5)
    heading_only = chunk("b.md::0", "three", 1, heading="New")
    g = fold([*BASE, merged, FileChanged(path="b.md", content_hash="c2", revised=(heading_only,))])
    assert g.merged == {"a.md::1": "b.md::0"} and g.nodes["b.md::0"].also == ("a.md#L3-L3",)
    edited = chunk("b.md::0", "three four", 1)
    g = fold([*BASE, merged, FileChanged(path="b.md", content_hash="c2", revised=(edited,))])
    assert "a.md::1" not in g.nodes and not g.merged and g.nodes["b.md::0"].also == ()
    assert g.files["a.md"] == graph.FileEntry("", ("a.md::0",), 2)  # stale: read again
    assert g.out["a.md::0"]["b.md::0"].weight == 0.55
