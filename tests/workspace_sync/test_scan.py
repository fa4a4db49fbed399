"""Scanning a workspace: what is read and what is skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ocb_events.errors import WorkspaceError
from workspace_sync import scan_workspace


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
