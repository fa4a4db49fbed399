"""Chunking: line ranges, coverage, headings and fences, and the size cap."""

from __future__ import annotations

from hypothesis import given, strategies as st

from workspace_sync import Piece, chunk_text, split_lines

line = st.one_of(
    st.just(""),
    st.just("# Title"),
    st.just("## Section two"),
    st.just("```"),
    st.just("- item with words"),
    st.just("1. numbered step"),
    st.text(alphabet="abcdefg hij", min_size=1, max_size=120),
    st.text(alphabet="abcdefg hij\t", min_size=200, max_size=2500),  # long lines
    st.text(alphabet="xyz", min_size=200, max_size=2500),  # one long word
    st.builds("# {}".format, st.text(alphabet="abc ", min_size=200, max_size=1000)),
)
documents = st.lists(line, max_size=30).map("\n".join)


def located(lines: list[str], p: Piece) -> str:
    """Where the contract says a piece's text is in its file."""
    whole = "\n".join(lines[p.start_line - 1 : p.end_line])
    return whole[p.start_col : p.start_col + len(p.text)]


@given(documents, st.integers(40, 800), st.integers(20, 2000))
def test_pieces_cover_every_character_once_match_the_file_and_keep_the_cap(
    doc: str, target: int, cap: int
) -> None:
    lines = split_lines(doc)
    pieces = chunk_text(doc, target_chars=target, max_chars=cap)
    spans: dict[int, list[tuple[int, int]]] = {}  # 0-based line -> covered [from, to)
    for p in pieces:
        assert 1 <= p.start_line <= p.end_line <= len(lines)
        assert p.text.strip() and len(p.text) <= cap  # no piece of blank lines only
        assert p.text == located(lines, p)
        whole = "\n".join(lines[p.start_line - 1 : p.end_line])
        if p.text != whole:  # a slice is part of one line
            assert p.start_line == p.end_line
            spans.setdefault(p.start_line - 1, []).append((p.start_col, p.start_col + len(p.text)))
        else:
            for i in range(p.start_line - 1, p.end_line):
                spans.setdefault(i, []).append((0, len(lines[i])))
    places = [(p.start_line, p.start_col) for p in pieces]
    assert places == sorted(set(places))  # in file order
    for i, x in enumerate(lines):
        got = spans.get(i, [])
        assert got == sorted(got) and all(a[1] <= b[0] for a, b in zip(got, got[1:], strict=False))
        gaps = zip([0] + [b for _, b in got], [a for a, _ in got] + [len(x)], strict=True)
        assert not "".join(x[a:b] for a, b in gaps).strip()  # every character once


def test_a_blank_line_between_two_long_lines_of_a_fence_is_no_piece() -> None:
    doc = "# Log\n\n```\n" + "a" * 2500 + "\n\n" + "b" * 2500 + "\n```\n"
    pieces = chunk_text(doc)
    assert all(p.text.strip() for p in pieces)
    assert 5 not in {p.start_line for p in pieces}


@given(st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=30), min_size=1, max_size=400))
def test_long_lines_are_cut_between_words(words: list[str]) -> None:
    doc = " ".join(words)
    pieces = chunk_text(doc, target_chars=60, max_chars=100)
    assert all((p.start_line, p.end_line) == (1, 1) for p in pieces)
    if len(doc) <= 100:
        assert [p.text for p in pieces] == [doc]
    else:
        assert " ".join(p.text for p in pieces) == doc  # no word was cut
        assert all(len(p.text) <= 60 for p in pieces)


def test_a_huge_one_line_file_becomes_capped_slices_of_line_1() -> None:
    doc = ("rollback the canary deploy " * 4000).strip() + " " + "z" * 5000 + " end\n"
    pieces = chunk_text(doc)  # the defaults: target 600, cap 2000
    assert len(pieces) > 150 and max(len(p.text) for p in pieces) <= 2000
    assert {(p.start_line, p.end_line) for p in pieces} == {(1, 1)}
    cols = [p.start_col for p in pieces]
    assert cols[0] == 0 and cols == sorted(cols)
    # the 5,000-character word is cut every 600 characters
    assert [p.text for p in pieces[-9:]] == ["z" * 600] * 8 + ["z" * 200 + " end"]


def test_headings_start_pieces_and_give_breadcrumbs() -> None:
    doc = "# Runbook\n\nIntro.\n\n## Rollback\n\nStep one.\n\n### Verify\n\nCheck it."
    pieces = chunk_text(doc)
    assert [(p.start_line, p.end_line, p.heading) for p in pieces] == [
        (1, 3, "Runbook"),
        (5, 7, "Runbook > Rollback"),
        (9, 11, "Runbook > Rollback > Verify"),
    ]


def test_nested_headings_without_body_join_the_next_section() -> None:
    pieces = chunk_text("# 2023-05-08\n\n## Session 1 (13:56)\n\n- 13:56 A: hi\n- 13:56 B: hello")
    assert [(p.start_line, p.end_line, p.heading) for p in pieces] == [
        (1, 6, "2023-05-08 > Session 1 (13:56)")
    ]


def test_long_lists_split_at_items_and_fences_stay_whole() -> None:
    items = "\n".join(f"- item {i} " + "word " * 20 for i in range(10))
    pieces = chunk_text(items, target_chars=300)
    assert len(pieces) > 1
    assert all(p.text.startswith("- item") for p in pieces)
    fenced = "```\ncode\n\n# not a heading\nmore\n```"
    assert [(p.start_line, p.end_line) for p in chunk_text(fenced)] == [(1, 6)]


def test_line_numbers_ignore_a_final_newline_and_crlf() -> None:
    assert split_lines("a\r\nb\n") == ["a", "b"]
    assert [(p.start_line, p.end_line) for p in chunk_text("a\r\n\r\nb\r\n")] == [(1, 3)]
