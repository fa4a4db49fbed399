"""File diffing: ids survive edits, and incremental sync equals a sync from scratch."""

from __future__ import annotations

from hypothesis import given, strategies as st

from ocb_events.schema import FileChanged, FileIndexed
from projections import graph
from tests.workspace_sync.support import apply, ft, previous, view
from workspace_sync import diff_file, diff_workspace

PARAS = [
    "alpha beta",
    "gamma delta",
    "# Heading",
    "epsilon",
    "- item one\n- item two",
    "zeta eta theta",
    "one long line " * 12 + "with a tail",  # slices of one line (cap 40)
    "one long line " * 12 + "with another tail",
    "x" * 130,  # a word longer than the cap
]


def in_file_order(g: graph.State) -> dict[str, list[str]]:
    return {p: [g.nodes[i].text for i in e.chunks] for p, e in g.files.items()}


workspaces = st.dictionaries(
    st.sampled_from(["a.md", "b.md", "dir/c.md"]),
    st.lists(st.sampled_from(PARAS), max_size=6).map("\n\n".join),
    max_size=3,
)


@given(st.lists(workspaces, min_size=1, max_size=5))
def test_incremental_sync_equals_sync_from_scratch(versions: list[dict[str, str]]) -> None:
    g = graph.initial()
    for version in versions:
        files = [ft(p, t) for p, t in sorted(version.items())]
        g = apply(g, diff_workspace(files, previous(g), target_chars=20, max_chars=40))
    last = [ft(p, t) for p, t in sorted(versions[-1].items())]
    fresh = apply(graph.initial(), diff_workspace(last, {}, target_chars=20, max_chars=40))
    assert view(g) == view(fresh)
    assert in_file_order(g) == in_file_order(fresh)
    assert {p: e.content_hash for p, e in g.files.items()} == {
        p: e.content_hash for p, e in fresh.files.items()
    }
    assert set(g.nodes) == {i for e in g.files.values() for i in e.chunks}


def test_unchanged_chunks_keep_their_ids_when_text_moves() -> None:
    v1 = ft("a.md", "one one\n\ntwo two\n\nthree three")
    first = diff_file(v1, None, target_chars=5)
    assert isinstance(first, FileIndexed)
    assert [c.id for c in first.chunks] == ["a.md::0", "a.md::1", "a.md::2"]
    g = apply(graph.initial(), [first])
    v2 = ft("a.md", "new top\n\none one\n\nthree three")
    ev = diff_file(v2, previous(g)["a.md"], target_chars=5)
    assert isinstance(ev, FileChanged)
    assert [(k.id, k.start_line) for k in ev.kept] == [("a.md::0", 3), ("a.md::2", 5)]
    assert [(c.id, c.text) for c in ev.added] == [("a.md::3", "new top")]
    assert ev.removed == ("a.md::1",)
    assert diff_file(v2, previous(apply(g, [ev]))["a.md"]) is None


def test_slices_of_a_long_line_keep_their_ids_and_file_order() -> None:
    words = [f"word{i:02d}" for i in range(84)]  # 7 words (48 characters) per slice
    v1 = ft("a.md", " ".join(words))
    first = diff_file(v1, None, target_chars=50, max_chars=100)
    assert isinstance(first, FileIndexed) and len(first.chunks) == 12
    assert [(c.start_line, c.end_line, c.start_col) for c in first.chunks[:3]] == [
        (1, 1, 0),
        (1, 1, 49),
        (1, 1, 98),
    ]
    g = apply(graph.initial(), [first])
    assert g.files["a.md"].chunks == tuple(f"a.md::{i}" for i in range(12))  # not ::10 < ::2
    # a slice's worth of words before them: every old slice keeps its id, one column on
    v2 = ft("a.md", "newish " * 7 + v1.text)
    ev = diff_file(v2, previous(g)["a.md"], target_chars=50, max_chars=100)
    assert isinstance(ev, FileChanged) and not ev.removed
    assert [(k.id, k.start_col) for k in ev.kept[:2]] == [("a.md::0", 49), ("a.md::1", 98)]
    assert [(c.id, c.start_col) for c in ev.added] == [("a.md::12", 0)]
    g = apply(g, [ev])
    assert g.files["a.md"].chunks == ("a.md::12", *(f"a.md::{i}" for i in range(12)))
    assert g.nodes["a.md::1"].start_col == 98
