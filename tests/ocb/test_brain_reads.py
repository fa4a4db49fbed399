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
