"""Scanning a workspace: what is read and what is skipped."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from ocb_events.errors import WorkspaceError
from tests.workspace_sync.hostile import BIG, KINDS, READ, REASONS, finishes, make, outside_files
from workspace_sync import FileText, Skipped, read_text, scan_paths, scan_workspace
from workspace_sync.scan import MISSING


def test_reads_markdown_and_text_and_skips_the_rest(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "notes").mkdir(parents=True)
    (ws / "notes" / "a.md").write_text("# A\n\nalpha\n")
    (ws / "b.txt").write_text("beta\n")
    (ws / "c.py").write_text("print(1)\n")
    (ws / ".hidden.md").write_text("secret\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "x.md").write_text("no\n")
    (ws / "node_modules").mkdir()
    (ws / "node_modules" / "y.md").write_text("no\n")
    (ws / "bin.md").write_bytes(b"\x00\x01\x02binary")
    (ws / "latin.md").write_bytes("caf\xe9".encode("latin-1"))
    outside = tmp_path / "outside.md"
    outside.write_text("outside\n")
    os.symlink(outside, ws / "link-out.md")
    os.symlink(ws / "b.txt", ws / "link-in.md")
    os.symlink(tmp_path, ws / "linkdir")
    files, skipped = scan_workspace(ws)
    assert [f.path for f in files] == ["b.txt", "link-in.md", "notes/a.md"]
    assert {s.path: s.reason for s in skipped} == {
        "bin.md": "binary file",
        "latin.md": "not UTF-8",
        "link-out.md": "symlink points outside the workspace",
        "linkdir": "symlinked directory",
        "node_modules": "dependency directory",
    }
    assert files[0].markdown is False and files[2].markdown is True


def test_build_and_dependency_directories_are_listed_once_each(tmp_path: Path) -> None:
    for d in ("build", "out", "dist", "node_modules", "notes/build", "notes/out/deep", ".git"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
        for name in ("a.md", "b.md", "c.txt"):
            (tmp_path / d / name).write_text("# kept out\n")
    (tmp_path / "notes" / "keep.md").write_text("# kept\n")
    files, skipped = scan_workspace(tmp_path)
    assert [f.path for f in files] == ["notes/keep.md"]
    assert [(s.path, s.reason) for s in skipped] == [
        ("build", "build output directory"),
        ("dist", "build output directory"),
        ("node_modules", "dependency directory"),
        ("notes/build", "build output directory"),
        ("notes/out", "build output directory"),
        ("out", "build output directory"),
    ]


def test_missing_and_file_workspaces_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="does not exist"):
        scan_workspace(tmp_path / "nope")
    f = tmp_path / "f.md"
    f.write_text("x")
    with pytest.raises(WorkspaceError, match="is a file"):
        scan_workspace(f)


def test_unreadable_file_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_text("ok")
    bad = tmp_path / "locked.md"
    bad.write_text("x")
    bad.chmod(0)
    try:
        files, skipped = scan_workspace(tmp_path)
    finally:
        bad.chmod(0o644)
    if os.geteuid() == 0:  # root reads anything: the file is simply indexed
        assert [f.path for f in files] == ["locked.md", "ok.md"]
    else:
        assert [s.path for s in skipped] == ["locked.md"] and skipped[0].reason.startswith(
            "unreadable"
        )


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A workspace with one entry of every hostile kind under ``notes/``."""
    ws = tmp_path / "ws"
    ws.mkdir()
    outside_files(ws)
    for i, kind in enumerate(KINDS):
        make(ws, f"notes/{i:02d}.md", kind)
    return ws


def _fifos(ws: Path) -> list[Path]:
    return [p for p in ws.rglob("*") if p.is_fifo()]


def test_nothing_but_a_regular_file_is_read_and_each_skip_says_why(hostile: Path) -> None:
    files, skipped = finishes(lambda: scan_workspace(hostile, max_bytes=BIG), _fifos(hostile))
    why = {s.path: s.reason for s in skipped}
    for i, kind in enumerate(KINDS):
        rel = f"notes/{i:02d}.md"
        if kind in READ:
            assert rel in {f.path for f in files}, kind
        elif kind != "directory":  # a directory named x.md is walked, not listed
            assert REASONS[kind] in why[rel], (kind, why.get(rel))
    assert why["pipe.md"] == "not a regular file (FIFO)"
    assert why["sock.md"] == "not a regular file (socket)"
    assert why["shared.md"].startswith(f"it has {1 + KINDS.count('hard link')} hard links")
    assert all("hunter2" not in f.text for f in files)


def test_scan_paths_and_read_text_skip_them_alike(hostile: Path) -> None:
    """The watcher's scan (``scan_paths``) and the single read (``read_text``) say what
    the full scan says."""
    _, skipped = scan_workspace(hostile, max_bytes=BIG)
    paths = sorted(f"notes/{i:02d}.md" for i, k in enumerate(KINDS) if k != "directory")
    files, some, _ = finishes(
        lambda: scan_paths(hostile, paths, known=(), max_bytes=BIG), _fifos(hostile)
    )
    assert [s for s in skipped if s.path in paths] == some
    for rel in paths:
        one = finishes(lambda r=rel: read_text(hostile, r, max_bytes=BIG), _fifos(hostile))
        assert one == next(x for x in [*files, *some] if x.path == rel)


def test_a_file_over_the_size_limit_is_skipped_before_it_is_read(tmp_path: Path) -> None:
    (tmp_path / "small.md").write_text("# Small\n")
    (tmp_path / "big.md").write_text("x" * 3_000_000)
    files, skipped = scan_workspace(tmp_path, max_bytes=2_000_000)
    assert [f.path for f in files] == ["small.md"]
    assert skipped == [
        Skipped("big.md", "larger than the size limit (3.0 MB > 2.0 MB, indexing.max_file_bytes)")
    ]
    files, _ = scan_workspace(tmp_path)  # the default limit reads it
    assert [f.path for f in files] == ["big.md", "small.md"]


def test_a_file_swapped_for_a_fifo_while_it_is_read_never_blocks(tmp_path: Path) -> None:
    """A writer keeps replacing notes/x.md with a FIFO and back: every read gives the
    file's text or skips the FIFO, and none waits for a FIFO's writer."""
    (tmp_path / "notes").mkdir()
    target = tmp_path / "notes" / "x.md"
    target.write_text("# X\n")
    stop = threading.Event()

    def swap() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            new = tmp_path / "notes" / f".new{n % 2}"
            new.unlink(missing_ok=True)
            if n % 2:
                os.mkfifo(new)
            else:
                new.write_text("# X\n")
            os.replace(new, target)

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        seen = finishes(
            lambda: {_outcome(read_text(tmp_path, "notes/x.md")) for _ in range(2000)},
            [target],
        )
    finally:
        stop.set()
        swapper.join()
    assert seen <= {"# X\n", "not a regular file (FIFO)", MISSING}


def _outcome(got: FileText | Skipped) -> str:
    return got.text if isinstance(got, FileText) else got.reason
