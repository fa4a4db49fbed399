"""A sync of only the paths that changed decides what a full sync decides for them."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import given, settings, strategies as st

from ocb.brain import Brain
from ocb_events.clock import TickClock
from ocb_events.memory import MemoryLog
from tests.ocb.support import chunk_view

WORDS = ["deploy", "rollback", "cache", "billing", "alert", "queue", "schema", "token"]
NAMES = ["a.md", "b.md", "notes/c.md", "notes/d.txt", "x/y/e.md", ".hidden.md", "f.md~"]

text = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join), min_size=1, max_size=6
).map(lambda paras: "# Title\n\n" + "\n\n".join(paras) + "\n")
change = st.tuples(st.sampled_from(NAMES), st.one_of(st.none(), text))  # None: delete


def write(root: Path, files: dict[str, str | None]) -> None:
    for rel, body in files.items():
        p = root / rel
        if body is None:
            p.unlink(missing_ok=True)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(body)


@settings(max_examples=25)
@given(st.dictionaries(st.sampled_from(NAMES[:5]), text, min_size=1), st.lists(change, max_size=6))
def test_a_sync_of_the_changed_paths_equals_a_full_sync(
    start: dict[str, str], changes: list[tuple[str, str | None]]
) -> None:
    root = Path(tempfile.mkdtemp())
    try:
        ws = root / "ws"
        ws.mkdir()
        write(ws, dict(start))
        part = Brain(root / "part", log=MemoryLog(clock=TickClock()), clock=TickClock())
        full = Brain(root / "full", log=MemoryLog(clock=TickClock()), clock=TickClock())
        part.sync(ws)
        full.sync(ws)
        write(ws, dict(changes))
        if not any((ws / n).exists() for n in NAMES[:5]):
            return  # a full sync refuses a workspace without any file
        part.sync(ws, paths={rel for rel, _ in changes} | {"notes", "x"})
        full.sync(ws)
        assert chunk_view(part) == chunk_view(full)
        assert sorted(part.state("memory").files) == sorted(full.state("memory").files)
    finally:
        shutil.rmtree(root)
