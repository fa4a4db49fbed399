"""``Brain.read_lines``: a library user reads lines of the workspace as ``memory_get``
does, from a brain opened read-only, never a file the brain does not index."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocb.brain import Brain
from ocb_events.errors import InputError, WorkspaceError


def test_a_brain_reads_lines_of_a_file_it_indexes(built: Path) -> None:
    with Brain(built, writer=False) as b:
        whole = (Path(b.graph.workspace) / "runbooks" / "rollback.md").read_text()
        got = b.read_lines("runbooks/rollback.md", 2, 2)
        assert (got.start_line, got.end_line) == (2, 3)
        assert got.text == "\n".join(whole.splitlines()[1:3])
        assert got.total_lines == len(whole.splitlines())
        with pytest.raises(WorkspaceError):
            b.read_lines("../outside.md")
        with pytest.raises(InputError):
            b.read_lines("runbooks/rollback.md", 0)


def test_events_of_some_types_are_those_of_the_whole_history(built: Path) -> None:
    from ocb_events.schema import tag_of

    with Brain(built) as b:
        for text in ("how do I roll back a bad deploy", "who is on call"):
            b.learn(1.0, trace_id=b.query(text).trace_id)
    with Brain(built, writer=False) as b:
        every = list(b.events())
        tags = sorted({tag_of(r.event) for r in every})
        for wanted in ([t] for t in tags):
            assert list(b.events(types=wanted)) == [r for r in every if tag_of(r.event) in wanted]
        two = ["query_traced", "edges_updated"]  # both stored in their packed forms
        assert (
            list(b.events(since=3, types=two, limit=3))
            == [r for r in every if r.seq > 3 and tag_of(r.event) in two][:3]
        )
