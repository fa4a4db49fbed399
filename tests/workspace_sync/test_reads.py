"""Reading lines of a workspace file for a client: the range, and every way out of the
workspace refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocb_events.errors import InputError, WorkspaceError
from workspace_sync.reads import MAX_LINES, Excerpt, read_lines
from workspace_sync.secrets import Scanner


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "notes").mkdir(parents=True)
    (ws / "notes" / "a.md").write_text("one\ntwo\nthree\nfour\n")
    (tmp_path / "secret.md").write_text("secret\n")
    return ws


def test_a_range_of_lines(root: Path) -> None:
    assert read_lines(root, "notes/a.md", 2, 2) == Excerpt("notes/a.md", 2, 3, 4, "two\nthree")
    assert read_lines(root, "notes/a.md") == Excerpt("notes/a.md", 1, 4, 4, "one\ntwo\nthree\nfour")
    assert read_lines(root, "notes/./a.md", 4, 10).text == "four"
    assert read_lines(root, "notes/a.md", 9) == Excerpt("notes/a.md", 9, 8, 4, "")


def test_a_read_is_capped(root: Path) -> None:
    (root / "long.md").write_text("x\n" * (MAX_LINES + 5))
    got = read_lines(root, "long.md", lines=MAX_LINES + 5)
    assert (got.end_line, got.total_lines) == (MAX_LINES, MAX_LINES + 5)


def test_a_symlink_inside_the_workspace_is_read(root: Path) -> None:
    (root / "alias.md").symlink_to(root / "notes" / "a.md")
    assert read_lines(root, "alias.md", 1, 1).text == "one"


@pytest.mark.parametrize(
    ("rel", "why"),
    [
        ("", "not relative"),
        ("/etc/passwd", "not relative"),
        ("../secret.md", "leaves the workspace"),
        ("notes/../../secret.md", "leaves the workspace"),
        ("out.md", "outside the workspace"),
        ("outdir/secret.md", "outside the workspace"),
        ("notes", "does not index"),
        ("dir.md", "not a file"),
        (".env", "does not index"),
        (".ocb/run/daemon.log", "does not index"),
        ("node_modules/x/readme.md", "does not index"),
        ("notes/a.md.swp", "does not index"),
        ("notes/b.md", "no file"),
    ],
)
def test_paths_out_of_the_workspace_are_refused(root: Path, rel: str, why: str) -> None:
    (root / "out.md").symlink_to(root.parent / "secret.md")
    (root / "dir.md").mkdir()
    (root / ".env").write_text("TOKEN=1\n")
    (root / "outdir").symlink_to(root.parent, target_is_directory=True)
    with pytest.raises(WorkspaceError, match=why) as err:
        read_lines(root, rel)
    assert err.value.hint


def test_an_absolute_path_inside_the_workspace_is_refused_too(root: Path) -> None:
    with pytest.raises(WorkspaceError, match="not relative"):
        read_lines(root, str(root / "notes" / "a.md"))


@pytest.mark.parametrize(("start", "lines"), [(0, None), (-3, 2), (1, 0)])
def test_a_range_below_one_is_refused(root: Path, start: int, lines: int | None) -> None:
    with pytest.raises(InputError):
        read_lines(root, "notes/a.md", start, lines)


def test_a_read_is_redacted_as_the_brain_redacts_and_keeps_its_line_numbers(root: Path) -> None:
    key = "ghp_" + "x9Kq2LmZ7vB4nR8tW1yC6pD3sF5gH0jA2eUo"
    (root / "keys.md").write_text(f"# Keys\n\ntoken: {key}\nafter\n")
    scan = Scanner()
    got = read_lines(root, "keys.md", 3, 2, redact=lambda t: scan.redact(t).text)
    assert key not in got.text and got.text.endswith("\nafter")
    assert (got.start_line, got.end_line) == (3, 4)
