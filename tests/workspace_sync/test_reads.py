"""Reading lines of a workspace file for a client: the range, and every way out of the
workspace refused, checked on the file a path leads to: only a regular file the brain
indexes is read, and a read never blocks."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from ocb_events.errors import InputError, WorkspaceError
from tests.workspace_sync.hostile import BIG, KINDS, READ, REASONS, finishes, make, outside_files
from workspace_sync import scan_workspace
from workspace_sync.reads import MAX_LINES, Excerpt, read_lines as read_any
from workspace_sync.secrets import Scanner


def read_lines(
    root: Path,
    rel: str,
    start: int = 1,
    lines: int | None = None,
    *,
    redact: Callable[[str], str] = lambda t: t,
) -> Excerpt:
    """``read_lines`` of a brain that indexes what a scan of ``root`` reads."""
    indexed = {f.path for f in scan_workspace(root)[0]}
    return read_any(root, rel, start, lines, indexed=indexed, redact=redact)


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
    assert read_lines(root, "notes/a.md", 4) == Excerpt("notes/a.md", 4, 4, 4, "four")


def test_a_start_past_the_end_is_refused_in_one_line(root: Path) -> None:
    with pytest.raises(InputError) as got:
        read_lines(root, "notes/a.md", 5)
    assert got.value.message == "the file has 4 lines; from must be at most 4"
    (root / "empty.md").write_text("")
    assert read_lines(root, "empty.md") == Excerpt("empty.md", 1, 0, 0, "")
    with pytest.raises(InputError, match="the file has 0 lines"):
        read_lines(root, "empty.md", 2)


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
        ("dir.md", r"not a regular file \(directory\)"),
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


def test_a_file_the_brain_has_not_indexed_is_refused(root: Path) -> None:
    with pytest.raises(WorkspaceError, match="has not indexed this file"):
        read_any(root, "notes/a.md", indexed=set())
    assert read_any(root, "notes/a.md", 1, 1, indexed={"notes/a.md"}).text == "one"


def test_a_file_over_the_size_limit_is_refused(root: Path) -> None:
    with pytest.raises(WorkspaceError, match="larger than the size limit"):
        read_any(root, "notes/a.md", indexed={"notes/a.md"}, max_bytes=4)


@pytest.mark.parametrize("kind", sorted(set(KINDS) - READ))
def test_every_hostile_entry_is_refused_in_one_line_and_never_blocks(
    tmp_path: Path, kind: str
) -> None:
    """Whatever the name says, the file it leads to decides, even when the brain lists
    the name as indexed (a file swapped since the sync)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    outside_files(ws)
    make(ws, "notes/x.md", kind)
    fifos = [ws / "pipe.md", ws / "notes" / "x.md"]
    read = lambda: read_any(ws, "notes/x.md", indexed={"notes/x.md"}, max_bytes=BIG)  # noqa: E731
    with pytest.raises(WorkspaceError) as err:
        finishes(read, fifos)
    assert REASONS[kind] in err.value.message and "\n" not in err.value.message
    assert "hunter2" not in err.value.message and err.value.hint


@given(st.lists(st.sampled_from(KINDS), min_size=1, max_size=8))
def test_a_read_succeeds_exactly_for_the_files_a_scan_indexes(kinds: list[str]) -> None:
    """Invariant: memory_get and the sync agree. Over any mix of entries, a path reads
    iff the scan indexed it, no read or scan blocks, and no secret a link or a hard
    link reaches comes back."""
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d) / "ws"
        ws.mkdir()
        outside_files(ws)
        for i, kind in enumerate(kinds):
            make(ws, f"notes/{i}.md", kind)
        fifos = [p for p in ws.rglob("*") if p.is_fifo()]
        files, _ = finishes(lambda: scan_workspace(ws, max_bytes=BIG), fifos)
        indexed = {f.path for f in files}
        for i, kind in enumerate(kinds):
            rel = f"notes/{i}.md"
            try:
                got = finishes(
                    lambda r=rel: read_any(ws, r, indexed=indexed, max_bytes=BIG),  # type: ignore[misc]
                    fifos,
                )
            except WorkspaceError as exc:
                assert rel not in indexed, (kind, exc.message)
                assert "hunter2" not in exc.message
            else:
                assert rel in indexed and kind in READ
                assert "hunter2" not in got.text
