"""``ocb show``'s text: a file put back together from the chunks the log holds is the
file, byte for byte, whenever it can be (``exact``), and says so when it cannot."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, strategies as st

from ocb.graph.file_text import file_at
from ocb_events.errors import InputError
from ocb_events.schema import Record
from projections import graph
from workspace_sync.diff import diff_file
from workspace_sync.scan import FileText

_WORD = st.text("abcdefgh", min_size=1, max_size=9)
_LINE = st.one_of(
    st.just(""),
    st.just("# A heading"),
    st.just("## Retain"),
    st.just("```"),
    st.lists(_WORD, min_size=1, max_size=12).map(" ".join).map(lambda s: f"- {s}"),
    st.lists(_WORD, min_size=1, max_size=12).map(" ".join),
    st.lists(_WORD, min_size=400, max_size=600).map(" ".join),  # cut into slices
)


def indexed(path: str, text: str) -> graph.State:
    f = FileText(path, text, hashlib.blake2b(text.encode(), digest_size=16).hexdigest())
    ev = diff_file(f, None)
    assert ev is not None
    return graph.evolve(graph.initial(), Record(seq=1, ts=0, actor="sync", event=ev))


@given(st.lists(_LINE, max_size=30), st.booleans())
def test_a_file_of_single_spaced_lines_comes_back_byte_for_byte(
    lines: list[str], newline: bool
) -> None:
    text = "\n".join(lines) + ("\n" if newline and lines else "")
    got = file_at(indexed("notes/a.md", text), "notes/a.md", 1)
    assert got.exact and got.text == text


def test_a_long_line_cut_at_runs_of_spaces_comes_back_single_spaced_and_not_exact() -> None:
    line = "  ".join(["word"] * 700)  # over the longest chunk: cut into slices
    got = file_at(indexed("a.md", f"# A\n{line}\n"), "a.md", 1)
    assert not got.exact and got.chunks > 2
    assert got.text.split() == f"# A\n{line}\n".split()


@pytest.mark.parametrize("path", ["../a.md", "/etc/passwd", "notes/../../a.md"])
def test_a_path_out_of_the_workspace_is_refused(path: str) -> None:
    with pytest.raises(InputError, match="is outside the workspace"):
        file_at(indexed("a.md", "x\n"), path, 1)


def test_an_unknown_path_names_close_ones() -> None:
    with pytest.raises(InputError, match="unknown file 'notes/b.md' at seq 1") as got:
        file_at(indexed("notes/a.md", "x\n"), "notes/b.md", 1)
    assert got.value.hint == "did you mean notes/a.md?"
