"""Chunking: line ranges, coverage, headings and fences."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from workspace_sync import chunk_text, split_lines

line = st.one_of(
    st.just(""),
    st.just("# Title"),
    st.just("## Section two"),
    st.just("```"),
    st.just("- item with words"),
    st.just("1. numbered step"),
    st.text(alphabet="abcdefg hij", min_size=1, max_size=120),
)
documents = st.lists(line, max_size=60).map("\n".join)


@given(documents, st.integers(40, 800))
def test_pieces_cover_every_nonblank_line_once_and_match_the_file(doc: str, target: int) -> None:
    lines = split_lines(doc)
    pieces = chunk_text(doc, target_chars=target)
    covered: list[int] = []
    for p in pieces:
        assert 1 <= p.start_line <= p.end_line <= len(lines)
        assert p.text == "\n".join(lines[p.start_line - 1 : p.end_line])
        covered.extend(range(p.start_line, p.end_line + 1))
    assert covered == sorted(covered) and len(covered) == len(set(covered))
    nonblank = {i + 1 for i, x in enumerate(lines) if x.strip()}
    assert nonblank <= set(covered)


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
