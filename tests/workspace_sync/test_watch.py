"""The watcher's filter and its loop over real file events."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from hypothesis import given, strategies as st

from tests.waiting import wait_for
from workspace_sync.scan import SKIP_DIRS, indexable, scan_workspace
from workspace_sync.watch import watch_batches, watched

PART = st.sampled_from(["notes", "a", ".git", ".obsidian", "node_modules", "build", "x y"])
NAME = st.sampled_from(
    ["n.md", "n.MD", "n.txt", "n.markdown", ".n.md.swp", "n.md~", "#n.md#", ".#n.md", "4913",
     "n.md.tmp", "n.py", "n.md.part", "n"]
)  # fmt: skip


@given(st.lists(PART, max_size=3), NAME)
def test_the_filter_matches_what_a_scan_reads(dirs: list[str], name: str) -> None:
    rel = "/".join([*dirs, name])
    hidden = any(p.startswith(".") for p in [*dirs, name])
    skipped = any(d in SKIP_DIRS for d in dirs)
    text = Path(name).suffix.lower() in {".md", ".txt", ".markdown"}
    assert indexable(rel) == (not hidden and not skipped and text)
    if "." in name.lstrip("."):
        assert watched(rel) == indexable(rel)


def test_a_scan_reads_exactly_the_indexable_files(tmp_path: Path) -> None:
    for rel in ["a.md", "b/c.txt", "b/.d.md", ".git/x.md", "node_modules/y.md", "e.md~", "f.py"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("text\n")
    files, _ = scan_workspace(tmp_path)
    assert [f.path for f in files] == ["a.md", "b/c.txt"]
    assert all(indexable(f.path) for f in files)


def _collect(
    root: Path, ignore: tuple[Path, ...] = ()
) -> tuple[list[frozenset[str]], threading.Event, threading.Thread]:
    got: list[frozenset[str]] = []
    stop = threading.Event()
    ready = threading.Event()

    def run() -> None:
        ready.set()
        for batch in watch_batches(root, ignore=ignore, quiet_ms=200, stop=stop):
            got.append(batch)

    t = threading.Thread(target=run)
    t.start()
    ready.wait()
    return got, stop, t


def test_batches_of_real_changes(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "brain").mkdir()
    keep = tmp_path / "notes" / "keep.md"
    keep.write_text("one\n")
    got, stop, t = _collect(tmp_path, ignore=(tmp_path / "brain",))
    try:
        # watchfiles needs a moment to register: write until the first batch arrives
        def first() -> bool:
            keep.write_text("two\n")
            return bool(got)

        wait_for(first, "the watcher to start")
        n = len(got)
        tmp = tmp_path / "notes" / "keep.md.tmp"
        tmp.write_text("three\n")
        (tmp_path / "notes" / ".keep.md.swp").write_text("swap")
        os.replace(tmp, keep)  # an atomic save
        (tmp_path / "brain" / "log.seg").write_text("ignored")
        wait_for(lambda: len(got) > n, "the atomic save")
        assert set().union(*got[n:]) == {"notes/keep.md"}
        n = len(got)
        os.replace(keep, tmp_path / "notes" / "moved.md")
        wait_for(lambda: {"notes/keep.md", "notes/moved.md"} <= set().union(*got[n:]), "a move")
        n = len(got)
        burst = tmp_path / "burst"
        burst.mkdir()
        names = {f"burst/f{i:04d}.md" for i in range(1000)}
        for rel in sorted(names):
            (tmp_path / rel).write_text("x\n")

        def covered() -> bool:  # a file written before its new directory was watched
            seen = set().union(*got[n:])  # is covered by the directory's own change
            return all(r in seen or "burst" in seen for r in names)

        wait_for(covered, "the burst")
        assert len(got) - n <= 10  # a few batches, not 1,000
    finally:
        stop.set()
        t.join()
    assert not t.is_alive()
