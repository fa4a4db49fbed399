"""File diffing: ids survive edits, and incremental sync equals a sync from scratch."""

from __future__ import annotations

from typing import TypedDict

from hypothesis import event, given, strategies as st

from ocb_events.schema import Event, FileChanged, FileIndexed, FileMoved
from projections import graph
from tests.workspace_sync.support import apply, ft, previous, view
from workspace_sync import FileText, PreviousFile, chunk_text, diff_file, diff_workspace, text_hash
from workspace_sync.diff import (
    MOVE_MIN,
    REVISION_MIN,
    _similar_pairs,
    move_score,
    tokens,
)

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


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a & b| / |a | b|`` (0 for two empty sets): the overlap the revision rule's
    threshold is stated in, computed the plain way, as the oracle of the tests."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


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


# ------------------------------------------------------------------ the revision rule

RUNBOOK = """# Deploy

Run the deploy scirpt from the main branch after tests pass.

Check the dashboard for errors during the rollout window.

## Rollback

Use helm rollback to return to the previous release quickly.
"""


def indexed(text: str, path: str = "a.md", target: int = 40) -> graph.State:
    return apply(graph.initial(), diff_workspace([ft(path, text)], {}, target_chars=target))


def id_of(g: graph.State, start: str) -> str:
    (found,) = [n.id for n in g.nodes.values() if n.text.startswith(start)]
    return found


def edit(
    g: graph.State, text: str, path: str = "a.md", target: int = 40
) -> tuple[graph.State, FileChanged]:
    (ev,) = diff_workspace([ft(path, text)], previous(g), target_chars=target, taken=g.nodes)
    assert isinstance(ev, FileChanged)
    return apply(g, [ev]), ev


def test_a_typo_fix_keeps_the_chunk_id() -> None:
    g = indexed(RUNBOOK)
    before = id_of(g, "Run the")
    g, ev = edit(g, RUNBOOK.replace("scirpt", "script"))
    assert [c.id for c in ev.revised] == [before] and not ev.added and not ev.removed
    assert g.nodes[before].text == "Run the deploy script from the main branch after tests pass."
    assert g.nodes[before].text_hash == text_hash(g.nodes[before].text)


def test_an_added_sentence_keeps_the_chunk_id() -> None:
    g = indexed(RUNBOOK)
    before, below = id_of(g, "Check the"), id_of(g, "Use helm")
    more = "rollout window. Page the on-call if errors climb."
    g, ev = edit(g, "Intro.\n\n" + RUNBOOK.replace("rollout window.", more))
    assert [c.id for c in ev.revised] == [before] and not ev.removed
    assert [c.text for c in ev.added] == ["Intro."]
    assert g.nodes[before].text.endswith(more) and g.nodes[before].start_line == 7
    assert g.nodes[below].start_line == 11 and below in {k.id for k in ev.kept}


def test_an_unrelated_rewrite_gets_a_new_id() -> None:
    g = indexed(RUNBOOK)
    before = id_of(g, "Run the")
    new = "The coffee machine on floor three is broken again."
    g, ev = edit(
        g, RUNBOOK.replace("Run the deploy scirpt from the main branch after tests pass.", new)
    )
    assert ev.removed == (before,) and [c.text for c in ev.added] == [new] and not ev.revised
    assert before not in g.nodes and id_of(g, "The coffee") == "a.md::5"


def test_an_edit_elsewhere_never_changes_the_ids_of_other_chunks() -> None:
    g = indexed(RUNBOOK)
    ids = {n.text: n.id for n in g.nodes.values()}
    g, ev = edit(g, RUNBOOK.replace("quickly", "at once"))
    assert [c.id for c in ev.revised] == [
        ids["Use helm rollback to return to the previous release quickly."]
    ]
    assert {k.id for k in ev.kept} == set(ids.values()) - {c.id for c in ev.revised}
    assert all(g.nodes[i].text == t for t, i in ids.items() if "quickly" not in t)


def test_an_edited_chunk_under_a_renamed_heading_gets_a_new_id() -> None:
    g = indexed(RUNBOOK)
    heading, under = id_of(g, "## Rollback"), id_of(g, "Use helm")
    renamed = RUNBOOK.replace("## Rollback", "## Revert").replace("quickly", "fast")
    g, ev = edit(g, renamed)
    assert {heading, under} == set(ev.removed)
    assert sorted(c.text for c in ev.added) == [
        "## Revert",
        "Use helm rollback to return to the previous release fast.",
    ]


def test_an_unchanged_chunk_under_a_renamed_heading_keeps_its_id_with_the_new_heading() -> None:
    g = indexed(RUNBOOK)
    under = id_of(g, "Use helm")
    g, ev = edit(g, RUNBOOK.replace("## Rollback", "## Revert"))
    assert [c.id for c in ev.revised] == [under]
    assert g.nodes[under].heading == "Deploy > Revert"
    assert [c.text for c in ev.added] == ["## Revert"]


def test_the_most_similar_pair_wins_and_ties_go_to_file_order() -> None:
    text = "# A\n\nalpha beta gamma delta\n\nalpha beta gamma epsilon\n"
    g = indexed(text, target=5)
    first, second = id_of(g, "alpha beta gamma delta"), id_of(g, "alpha beta gamma epsilon")
    # one new piece as close to both (3 of 5 tokens): the first previous chunk keeps it
    _, ev = edit(g, "# A\n\nalpha beta gamma zeta\n", target=5)
    assert [c.id for c in ev.revised] == [first] and ev.removed == (second,)
    # two new pieces, each closest to the other's old chunk: best pairs first
    both = "# A\n\nalpha beta gamma epsilon omega\n\nalpha beta gamma delta omega\n"
    _, ev = edit(indexed(text, target=5), both, target=5)
    assert [(c.id, c.text) for c in ev.revised] == [
        (second, "alpha beta gamma epsilon omega"),
        (first, "alpha beta gamma delta omega"),
    ]


def test_a_chunk_held_without_its_text_is_matched_by_its_hash_only() -> None:
    old = PreviousFile("old", [("a.md::0", text_hash("alpha beta gamma"))], 1)
    ev = diff_file(ft("a.md", "alpha beta gamma delta"), old)
    assert isinstance(ev, FileChanged) and ev.removed == ("a.md::0",) and not ev.revised
    ev = diff_file(ft("a.md", "alpha beta gamma\n\nnew"), old, target_chars=5)
    assert isinstance(ev, FileChanged) and [k.id for k in ev.kept] == ["a.md::0"]


def test_tokens_are_lowercase_words() -> None:
    assert tokens("Run the DEPLOY, run_it!") == frozenset({"run", "the", "deploy", "it"})


# ------------------------------------------------------------------ moves


def test_a_moved_file_keeps_every_id_and_a_new_file_at_its_old_path_gets_new_ones() -> None:
    g = indexed(RUNBOOK)
    ids = g.files["a.md"].chunks
    events = diff_workspace([ft("runbooks/deploy.md", RUNBOOK)], previous(g), taken=g.nodes)
    assert events == [
        FileMoved(old_path="a.md", path="runbooks/deploy.md", content_hash=text_hash(RUNBOOK))
    ]
    g = apply(g, events)
    assert "a.md" not in g.files and g.files["runbooks/deploy.md"].chunks == ids
    assert {g.nodes[i].path for i in ids} == {"runbooks/deploy.md"}
    assert g.nodes[ids[1]].source == "runbooks/deploy.md#L3-L3"
    files = [ft("a.md", "fresh text"), ft("runbooks/deploy.md", RUNBOOK)]
    (new,) = diff_workspace(files, previous(g), target_chars=40, taken=g.nodes)
    assert isinstance(new, FileIndexed) and new.chunks[0].id == f"a.md::{len(ids)}"
    # even when the caller knows only the file that changed
    (alone,) = diff_workspace(files[:1], {}, target_chars=40, taken=g.nodes)
    assert alone == new


def test_moves_pair_in_sorted_order_and_the_rest_is_removed_or_indexed() -> None:
    g = apply(graph.initial(), diff_workspace([ft("b.md", "same"), ft("a.md", "same")], {}))
    files = [ft("z.md", "same"), ft("c.md", "same"), ft("d.md", "other")]
    events = diff_workspace(files, previous(g), taken=g.nodes)
    assert [type(e).__name__ for e in events] == ["FileMoved", "FileMoved", "FileIndexed"]
    assert [(e.old_path, e.path) for e in events if isinstance(e, FileMoved)] == [
        ("a.md", "c.md"),
        ("b.md", "z.md"),
    ]
    g = apply(g, events)
    assert g.files["c.md"].chunks == ("a.md::0",) and g.files["z.md"].chunks == ("b.md::0",)


def test_a_file_moved_and_edited_at_once_keeps_the_ids_of_its_chunks() -> None:
    g = indexed(RUNBOOK)
    ids = {n.text: n.id for n in g.nodes.values()}
    edited = RUNBOOK.replace("scirpt", "script") + "\nOne appended line.\n"
    events = diff_workspace([ft("b.md", edited)], previous(g), target_chars=40, taken=g.nodes)
    moved, changed = events
    assert moved == FileMoved(old_path="a.md", path="b.md", content_hash=text_hash(RUNBOOK))
    assert isinstance(changed, FileChanged) and changed.path == "b.md"
    assert changed.content_hash == text_hash(edited) and not changed.removed
    typo_id = ids["Run the deploy scirpt from the main branch after tests pass."]
    assert [c.id for c in changed.revised] == [typo_id]
    assert [(c.id, c.text) for c in changed.added] == [("b.md::5", "One appended line.")]
    assert {k.id for k in changed.kept} == set(ids.values()) - {typo_id}
    g = apply(g, events)
    assert sorted(g.files) == ["b.md"] and set(ids.values()) < set(g.files["b.md"].chunks)
    assert {n.path for n in g.nodes.values()} == {"b.md"}
    assert g.nodes[typo_id].text.startswith("Run the deploy script")
    fresh = apply(graph.initial(), diff_workspace([ft("b.md", edited)], {}, target_chars=40))
    assert view(g) == view(fresh)


def test_a_file_moved_and_mostly_rewritten_is_removed_and_indexed() -> None:
    g = indexed(RUNBOOK)
    rewritten = "# Deploy\n\nShip on Fridays only.\n\nNever on a holiday.\n\n## Notes\n"
    assert move_score(chunk_text(rewritten, target_chars=40), previous(g)["a.md"]) < MOVE_MIN
    events = diff_workspace([ft("b.md", rewritten)], previous(g), target_chars=40, taken=g.nodes)
    assert [type(e).__name__ for e in events] == ["FileIndexed", "FileRemoved"]


def test_the_share_of_kept_chunks_is_over_the_larger_count() -> None:
    old = previous(indexed(RUNBOOK))["a.md"]
    pieces = chunk_text(RUNBOOK, target_chars=40)
    assert move_score(pieces, old) == 1.0
    assert move_score(pieces[:2], old) == 2 / len(pieces)
    assert move_score(pieces + chunk_text("x y\n\nz w", target_chars=2), old) == 5 / 7
    assert move_score([], PreviousFile("", [], 0)) == 0.0


SPLIT = "# A\n\nalpha beta\n\ngamma delta\n\n# B\n\nepsilon zeta\n\neta theta\n"


def test_competing_moves_take_the_highest_share_then_the_paths_in_sorted_order() -> None:
    g = indexed(SPLIT, target=5)  # six chunks: two headings, two paragraphs under each
    first, second = SPLIT.split("# B")
    second = "# B" + second
    # a file split in two: the larger part keeps its ids, the other part is new
    bigger = first + "# B\n\nepsilon zeta\n"
    files = [ft("z-big.md", bigger), ft("a-small.md", second.replace("epsilon zeta\n\n", ""))]
    events = diff_workspace(files, previous(g), target_chars=5, taken=g.nodes)
    assert [type(e).__name__ for e in events] == ["FileMoved", "FileChanged", "FileIndexed"]
    assert events[0] == FileMoved(old_path="a.md", path="z-big.md", content_hash=text_hash(SPLIT))
    # split in equal halves, or a copy plus a delete: the first new path by sorted order
    for pair in ([first, second], [SPLIT + "more\n", SPLIT + "more\n"]):
        files = [ft("y.md", pair[0]), ft("x.md", pair[1])]
        events = diff_workspace(files, previous(g), target_chars=5, taken=g.nodes)
        assert events[0] == FileMoved(old_path="a.md", path="x.md", content_hash=text_hash(SPLIT))
        assert [type(e).__name__ for e in events[1:]] == ["FileIndexed", "FileChanged"]


def test_two_renames_at_once_pair_each_file_with_its_own_edit() -> None:
    other = SPLIT.replace("alpha", "omega").replace("epsilon", "kappa").replace("eta ", "iota ")
    g = apply(
        graph.initial(),
        diff_workspace([ft("a.md", SPLIT), ft("b.md", other)], {}, target_chars=5),
    )
    ids = {p: set(e.chunks) for p, e in g.files.items()}
    files = [ft("a2.md", other + "new line\n"), ft("b2.md", SPLIT + "new line\n")]
    events = diff_workspace(files, previous(g), target_chars=5, taken=g.nodes)
    assert [(e.old_path, e.path) for e in events if isinstance(e, FileMoved)] == [
        ("a.md", "b2.md"),
        ("b.md", "a2.md"),
    ]
    g = apply(g, events)
    assert ids["a.md"] < set(g.files["b2.md"].chunks) and ids["b.md"] < set(g.files["a2.md"].chunks)


def test_a_subset_diff_moves_what_it_sees_and_leaves_the_rest() -> None:
    g = apply(graph.initial(), diff_workspace([ft("a.md", "one"), ft("b.md", "two")], {}))
    subset = {"a.md": previous(g)["a.md"]}
    events = diff_workspace([ft("c.md", "one")], subset, taken=g.nodes)
    assert events == [FileMoved(old_path="a.md", path="c.md", content_hash=text_hash("one"))]
    g = apply(g, events)
    assert sorted(g.files) == ["b.md", "c.md"]


# ------------------------------------------------------------------ random edit scripts

WORDS = ["deploy", "rollback", "helm", "cache", "queue", "alert", "pager", "token", "index"]
word_lists = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8)
md_lines = st.one_of(
    st.builds(lambda n, w: "#" * n + " " + w, st.integers(1, 3), st.sampled_from(WORDS)),
    word_lists.map(" ".join),
    word_lists.map(lambda ws: "- " + " ".join(ws)),
    st.just(""),
)
NAMES = ["a.md", "b.md", "notes/c.md", "d.md"]
edits = st.one_of(
    st.tuples(st.just("insert"), st.integers(0, 99), md_lines),
    st.tuples(st.just("delete"), st.integers(0, 99), st.just("")),
    st.tuples(st.just("replace"), st.integers(0, 99), md_lines),
    st.tuples(st.just("typo"), st.integers(0, 99), st.integers(0, 99)),
    st.tuples(st.just("append"), st.integers(0, 99), word_lists.map(" ".join)),
    st.tuples(st.just("heading"), st.integers(0, 99), st.sampled_from(WORDS)),
    st.tuples(st.just("rename"), st.integers(0, 99), st.just("")),
)


def edited(lines: list[str], op: str, i: int, arg: str | int) -> list[str]:
    """``lines`` after one edit at line ``i`` (modulo their number)."""
    out, at = list(lines), i % (len(lines) or 1)
    if op == "insert":
        out.insert(i % (len(lines) + 1), str(arg))
    elif not out:
        return out
    elif op in ("delete", "replace"):
        out[at : at + 1] = [] if op == "delete" else [str(arg)]
    elif op == "typo" and out[at]:
        k = int(arg) % len(out[at])
        out[at] = out[at][:k] + ("x" if out[at][k] != "x" else "y") + out[at][k + 1 :]
    elif op == "append":
        out[at] = f"{out[at]} {arg}".strip()
    elif op == "heading":
        heads = [j for j, line in enumerate(out) if line.startswith("#")]
        j = heads[i % len(heads)] if heads else at
        out[j] = f"## {arg}" if j not in heads else out[j].split(" ")[0] + f" {arg}"
    return out


def apply_edit(ws: dict[str, list[str]], edit: tuple[str, int, str | int], k: int) -> None:
    path = sorted(ws)[k % len(ws)]
    op, i, arg = edit
    if op == "rename":
        free = [n for n in NAMES if n not in ws]
        ws[free[i % len(free)]] = ws.pop(path)
    else:
        ws[path] = edited(ws[path], op, i, arg)


def check_rule(before: dict[str, PreviousFile], ev: FileChanged, live: set[str]) -> None:
    """The contract of the revision rule for one changed file (see workspace_sync.diff)."""
    old = {c.id: c for c in before[ev.path].chunks}
    reused = [k.id for k in ev.kept] + [c.id for c in ev.revised]
    assert len(set(reused)) == len(reused) and set(reused) <= set(old)
    assert set(ev.removed) == set(old) - set(reused)
    assert all(old[k.id].text_hash == k.text_hash for k in ev.kept)
    for c in ev.revised:
        p = old[c.id]
        same = p.text_hash == c.text_hash and p.heading != c.heading
        similar = p.heading == c.heading and jaccard(tokens(p.text), tokens(c.text)) >= 0.5
        assert same or (p.text and similar)
    gone = [old[i] for i in ev.removed]
    for a in ev.added:
        assert a.id not in live
        for r in gone:  # a chunk the rule calls the same never loses its id
            assert r.text_hash != a.text_hash
            assert r.heading != a.heading or jaccard(tokens(r.text), tokens(a.text)) < 0.5


def file_view(g: graph.State) -> dict[str, list[tuple[str, int, int, int, str]]]:
    return {
        p: [
            (n.text, n.start_line, n.end_line, n.start_col, n.heading)
            for n in map(g.nodes.get, e.chunks)
            if n
        ]
        for p, e in g.files.items()
    }


@given(
    st.dictionaries(st.sampled_from(NAMES[:2]), st.lists(md_lines, max_size=10), min_size=1),
    st.lists(st.tuples(edits, st.integers(0, 9)), min_size=1, max_size=12),
)
def test_random_edit_scripts_keep_ids_by_the_rule_and_end_as_a_sync_from_scratch(
    start: dict[str, list[str]], script: list[tuple[tuple[str, int, str | int], int]]
) -> None:
    def files(ws: dict[str, list[str]]) -> list[FileText]:
        return [ft(p, "".join(line + "\n" for line in ws[p])) for p in sorted(ws)]

    def diff(g: graph.State, ws: dict[str, list[str]]) -> list[Event]:
        return diff_workspace(files(ws), previous(g), target_chars=30, max_chars=60, taken=g.nodes)

    ws = {p: list(lines) for p, lines in start.items()}
    g = apply(graph.initial(), diff(graph.initial(), ws))
    for edit_, k in script:
        apply_edit(ws, edit_, k)
        before, live = previous(g), set(g.nodes)
        events = diff(g, ws)
        for ev in events:
            if isinstance(ev, FileChanged):
                check_rule(before, ev, live)
            elif isinstance(ev, FileIndexed):
                assert not {c.id for c in ev.chunks} & live
        g = apply(g, events)
        event(
            f"revised: {min(3, sum(len(e.revised) for e in events if isinstance(e, FileChanged)))}"
        )
        for ev in events:
            if isinstance(ev, FileMoved):
                event("moved")
                assert g.files[ev.path].chunks == tuple(c.id for c in before[ev.old_path].chunks)
        assert set(g.nodes) == {i for e in g.files.values() for i in e.chunks}
    fresh = apply(graph.initial(), diff(graph.initial(), ws))
    assert file_view(g) == file_view(fresh)


small_edits = st.lists(edits.filter(lambda e: e[0] != "rename"), max_size=3)


class Sizes(TypedDict):
    target_chars: int
    max_chars: int


KW = Sizes(target_chars=30, max_chars=60)


def lines_text(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


@given(
    st.lists(md_lines, min_size=1, max_size=12),
    small_edits,
    st.sampled_from(["b.md", "notes/c.md"]),
)
def test_a_rename_plus_edits_keeps_the_ids_an_edit_in_place_keeps(
    lines: list[str], script: list[tuple[str, int, str | int]], new_path: str
) -> None:
    g = apply(graph.initial(), diff_workspace([ft("a.md", lines_text(lines))], {}, **KW))
    for op, i, arg in script:
        lines = edited(lines, op, i, arg)
    text, old = lines_text(lines), previous(g)["a.md"]
    pieces = chunk_text(text, **KW)
    in_place = diff_workspace([ft("a.md", text)], previous(g), taken=g.nodes, **KW)
    events = diff_workspace([ft(new_path, text)], previous(g), taken=g.nodes, **KW)
    if text_hash(text) == old.content_hash:
        assert events == [FileMoved(old_path="a.md", path=new_path, content_hash=text_hash(text))]
        return
    (edit_,) = in_place
    assert isinstance(edit_, FileChanged)
    share = (len(edit_.kept) + len(edit_.revised)) / max(len(pieces), len(old.chunks), 1)
    assert share == move_score(pieces, old)
    if share < MOVE_MIN:
        event("removed and indexed")
        assert [type(e).__name__ for e in events] == ["FileIndexed", "FileRemoved"]
        return
    event("moved and edited")
    moved, changed = events
    assert moved == FileMoved(old_path="a.md", path=new_path, content_hash=old.content_hash)
    assert isinstance(changed, FileChanged) and changed.path == new_path
    assert (changed.kept, changed.revised, changed.removed) == (
        edit_.kept,
        edit_.revised,
        edit_.removed,
    )
    assert [c.text for c in changed.added] == [c.text for c in edit_.added]
    g = apply(g, events)
    ids = g.files[new_path].chunks
    for h in {c.text_hash for c in old.chunks}:  # an unchanged text keeps its id
        same = [c.id for c in old.chunks if c.text_hash == h]
        now = sum(text_hash(p.text) == h for p in pieces)
        assert len(set(same) & set(ids)) >= min(len(same), now)


@given(st.lists(md_lines, min_size=1, max_size=12), word_lists.map(" ".join))
def test_a_rename_plus_one_appended_paragraph_keeps_the_ids_of_the_chunks_before_it(
    lines: list[str], line: str
) -> None:
    g = apply(graph.initial(), diff_workspace([ft("a.md", lines_text(lines))], {}, **KW))
    ids = g.files["a.md"].chunks
    events = diff_workspace(
        [ft("b.md", lines_text([*lines, "", line]))], previous(g), taken=g.nodes, **KW
    )
    if len(ids) < 2:  # a lone chunk that the paragraph joins may change past the rule
        return
    assert [type(e).__name__ for e in events] == ["FileMoved", "FileChanged"]
    g = apply(g, events)
    assert set(ids[:-1]) <= set(g.files["b.md"].chunks) and "a.md" not in g.files


token_sets = st.frozensets(st.sampled_from(WORDS), max_size=6)


@given(st.lists(token_sets, max_size=8), st.lists(token_sets, max_size=8), st.integers(1, 9))
def test_similar_pairs_are_every_pair_that_reaches_the_threshold(
    new: list[frozenset[str]], old: list[frozenset[str]], block: int
) -> None:
    expected = sorted(
        (-jaccard(a, b), j, i)
        for i, a in enumerate(new)
        for j, b in enumerate(old)
        if jaccard(a, b) >= REVISION_MIN
    )
    got = _similar_pairs(list(enumerate(new)), list(enumerate(old)), block)
    assert sorted(got) == expected
