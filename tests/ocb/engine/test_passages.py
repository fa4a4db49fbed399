"""Passages: the lines of a chunk an answer shows, with exact sources."""

from __future__ import annotations

from hypothesis import given, strategies as st

from ocb.engine.passages import Passage, cut_to, named_in, speaker, split, whole
from projections.graph import Node

DIALOGUE = [
    "# 2023-05-08",
    "",
    "## Session 1 (13:56)",
    "",
    "- 13:56 Caroline: I went to a support group yesterday.",
    "- 13:56 Melanie: That sounds powerful! I took the kids swimming.",
    "  We stayed until dark.",
    "- 13:56 Caroline: Painting helps me too.",
    "",
]


def node(lines: list[str], start: int = 1, path: str = "memory/2023-05-08.md") -> Node:
    return Node(
        id=f"{path}::0", kind="chunk", text="\n".join(lines), path=path,
        start_line=start, end_line=start + len(lines) - 1,
    )  # fmt: skip


def shown(ps: list[Passage]) -> list[tuple[int, int]]:
    return [(p.start, p.end) for p in ps]


def test_headings_and_blank_lines_around_a_chunk_are_left_out() -> None:
    mine, rest = split(node(DIALOGUE), frozenset())
    assert shown(mine) == [(5, 8)] and rest == []
    assert mine[0].text == "\n".join(DIALOGUE[4:8])


def test_a_named_speaker_s_lines_come_first_and_the_others_after() -> None:
    mine, rest = split(node(DIALOGUE), named_in("What did Melanie do with her kids?"))
    assert shown(mine) == [(6, 7)]  # the continuation line belongs to her turn
    assert mine[0].text.endswith("We stayed until dark.")
    assert shown(rest) == [(5, 5), (8, 8)]
    both, none = split(node(DIALOGUE), named_in("What do Caroline and Melanie share?"))
    assert shown(both) == [(5, 8)] and none == []
    lower, _ = split(node(DIALOGUE), named_in("what did melanie do"))
    assert shown(lower) == [(5, 8)]  # names are matched as written


def test_speakers_of_common_line_shapes() -> None:
    assert speaker("- 13:56 Caroline: hi") == "Caroline"
    assert speaker("Priya: the deploy is done") == "Priya"
    assert speaker("* **Ana Lima**: ok") == "Ana Lima"
    assert speaker("- [09:14] Bob: rolled back") == "Bob"
    assert speaker("- deploy: run make") == ""
    assert speaker("kubectl rollout undo deploy/api") == ""


def test_a_chunk_that_is_not_line_for_line_is_one_whole_passage() -> None:
    sliced = Node(
        id="a.md::0", kind="chunk", text="part of a long line", path="a.md",
        start_line=3, end_line=3, start_col=400,
    )  # fmt: skip
    assert split(sliced, frozenset()) == ([whole(sliced)], [])
    injected = Node(id="c1", kind="CORRECTION", text="never restart the db")
    assert split(injected, frozenset()) == ([whole(injected)], [])
    assert cut_to(whole(injected), 5) is None


def test_a_cut_passage_ends_at_a_line_boundary_and_says_so() -> None:
    p = split(node(DIALOGUE), frozenset())[0][0]
    first = len(DIALOGUE[4])
    got = cut_to(p, first + 10)
    assert got is not None and got.cut and (got.start, got.end) == (5, 5)
    assert got.text == DIALOGUE[4]
    assert cut_to(p, first - 1) is None
    full = cut_to(p, len(p.text))
    assert full is not None and not full.cut and full.text == p.text


line = st.one_of(
    st.just(""),
    st.just("## Heading"),
    st.builds(lambda w, t: f"- 10:0{len(t) % 10} {w}: {t}", st.sampled_from(["Ana", "Bo", "Cy"]),
              st.text("abc xyz", min_size=1, max_size=12)),
    st.text("abc xyz", min_size=1, max_size=12).map(lambda t: "  " + t),
)  # fmt: skip


@given(
    st.lists(line, min_size=1, max_size=12),
    st.integers(1, 50),
    st.sets(st.sampled_from(["Ana", "Bo", "Cy", "Dee"])),
)
def test_every_passage_shows_exactly_the_lines_it_cites(
    lines: list[str], start: int, names: set[str]
) -> None:  # fmt: skip
    n = node(lines, start)
    mine, rest = split(n, frozenset(names))
    seen: set[int] = set()
    for p in mine + rest:
        assert p.text.split("\n") == lines[p.start - start : p.end - start + 1]
        assert p.source(n) == f"{n.path}#L{p.start}-L{p.end}"
        assert not seen & set(range(p.start, p.end + 1))  # no line is shown twice
        seen |= set(range(p.start, p.end + 1))
