"""Writing a workspace file: atomic, keeps mode, owner and symlinks, refuses what it
cannot keep with one line, and leaves no temp file behind (a killed writer's is swept)."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from ocb_events.errors import WorkspaceError
from workspace_sync import sweep_temp_files, write_workspace_file, writes

LOG = "memory/2026-11-20.md"
OLD = "# 2026-11-20\n\n## Retain\n- W @Peter: owns billing\n"
NEW = OLD + "- B @Peter: drinks tea\n"


def listing(root: Path) -> dict[str, tuple[str, str | bytes, int]]:
    """Every entry under ``root`` (hidden ones too): kind, link target or bytes, mode."""
    out: dict[str, tuple[str, str | bytes, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            p = Path(dirpath) / name
            st = p.lstat()
            rel = p.relative_to(root).as_posix()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p), 0)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", b"", stat.S_IMODE(st.st_mode))
            else:
                out[rel] = ("file", p.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


def temps(root: Path) -> list[str]:
    return sorted(k for k in listing(root) if ".ocb-" in k)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / LOG).write_text(OLD)
    return root


@pytest.mark.parametrize("mode", [0o644, 0o664, 0o600, 0o640])
def test_an_existing_file_keeps_its_mode(ws: Path, mode: int) -> None:
    os.chmod(ws / LOG, mode)
    assert write_workspace_file(ws, LOG, NEW) == (ws / LOG).resolve()
    assert (ws / LOG).read_text() == NEW
    assert stat.S_IMODE((ws / LOG).stat().st_mode) == mode
    assert temps(ws) == []


def test_a_private_files_new_text_is_never_readable_by_more_than_the_old(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temp file takes the old file's mode before it holds a byte of the text."""
    os.chmod(ws / LOG, 0o600)
    seen: list[os.stat_result] = []
    real = writes._keep_metadata

    def watched(fd: int, old: os.stat_result) -> None:
        seen.append(os.fstat(fd))
        real(fd, old)

    monkeypatch.setattr(writes, "_keep_metadata", watched)
    write_workspace_file(ws, LOG, NEW)
    assert len(seen) == 1 and seen[0].st_size == 0
    assert stat.S_IMODE(seen[0].st_mode) & 0o077 == 0, "private from its creation"
    assert stat.S_IMODE((ws / LOG).stat().st_mode) == 0o600 and (ws / LOG).read_text() == NEW


def test_a_new_file_gets_the_mode_open_gives_under_the_umask(ws: Path) -> None:
    old = os.umask(0o027)
    try:
        write_workspace_file(ws, "bank/entities/Peter.md", "# Peter\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((ws / "bank/entities/Peter.md").stat().st_mode) == 0o640
    assert stat.S_IMODE((ws / "bank").stat().st_mode) == 0o750


def test_a_file_with_a_long_name_gets_a_temp_name_that_fits(ws: Path) -> None:
    rel = "notes/" + "é" * 120 + ".md"  # 243 bytes: the name with a prefix would not fit
    write_workspace_file(ws, rel, "# long\n")
    assert (ws / rel).read_text() == "# long\n" and os.listdir(ws / "notes") == [rel[6:]]


def test_a_symlink_inside_the_workspace_is_written_through(ws: Path) -> None:
    (ws / "days").mkdir()
    real = ws / "days" / "20.md"
    (ws / LOG).rename(real)
    os.chmod(real, 0o664)
    os.symlink("../days/20.md", ws / LOG)
    assert write_workspace_file(ws, LOG, NEW) == real.resolve()
    assert os.readlink(ws / LOG) == "../days/20.md"
    assert real.read_text() == NEW and stat.S_IMODE(real.stat().st_mode) == 0o664
    assert temps(ws) == []


@pytest.mark.parametrize(
    ("link", "message", "hint"),
    [
        (
            "outside",
            f"will not write {LOG}: it is a symlink to {{outside}}, outside the workspace;"
            " nothing was written",
            "replace the link with a copy of the file, or link to a file inside the workspace",
        ),
        (
            "broken",
            f"will not write {LOG}: it is a broken symlink; nothing was written",
            "point the link at a file inside the workspace, or remove it",
        ),
    ],
    ids=["outside", "broken"],
)
def test_a_link_out_of_the_workspace_or_a_broken_one_is_refused(
    ws: Path, tmp_path: Path, link: str, message: str, hint: str
) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text(OLD)
    (ws / LOG).unlink()
    os.symlink(outside if link == "outside" else tmp_path / "gone.md", ws / LOG)
    before, elsewhere = listing(ws), listing(tmp_path)
    with pytest.raises(WorkspaceError) as err:
        write_workspace_file(ws, LOG, NEW)
    assert err.value.message == message.format(outside=outside.resolve())
    assert err.value.hint == hint and "\n" not in err.value.message
    assert listing(ws) == before and listing(tmp_path) == elsewhere


@pytest.mark.parametrize("rel", ["../x.md", "memory/../../x.md", "/tmp/x.md", ""])
def test_a_path_that_leaves_the_workspace_is_refused(ws: Path, rel: str) -> None:
    before = listing(ws.parent)
    with pytest.raises(WorkspaceError, match="the path leaves the workspace"):
        write_workspace_file(ws, rel, NEW)
    assert listing(ws.parent) == before


def test_a_symlinked_directory_on_the_way_is_refused(ws: Path, tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    os.symlink(tmp_path / "other", ws / "bank")
    with pytest.raises(WorkspaceError) as err:
        write_workspace_file(ws, "bank/opinions.md", "# Opinions\n")
    assert err.value.message == (
        "will not write bank/opinions.md: bank is a symlinked directory; nothing was written"
    )
    assert err.value.hint == "make bank a plain directory of the workspace"
    assert list((tmp_path / "other").iterdir()) == []


def test_a_hard_linked_file_is_refused_and_both_names_keep_the_text(ws: Path) -> None:
    os.link(ws / LOG, ws / "memory" / "copy.md")
    before = listing(ws)
    with pytest.raises(WorkspaceError) as err:
        write_workspace_file(ws, LOG, NEW)
    assert err.value.message == (
        f"will not write {LOG}: it has 2 hard links and a rewrite would break them;"
        " nothing was written"
    )
    assert "ln -sf" in err.value.hint
    assert listing(ws) == before


def test_text_that_cannot_be_encoded_fails_midway_and_leaves_no_temp_file(ws: Path) -> None:
    before = listing(ws)
    with pytest.raises(WorkspaceError, match=f"cannot write {LOG}: the text has characters"):
        write_workspace_file(ws, LOG, "x" * 100_000 + "\udcff")
    assert listing(ws) == before


def run_python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_full_disk_midway_leaves_the_file_and_no_temp_file(ws: Path) -> None:
    # A file size limit makes write() fail with EFBIG once the temp file reaches 4 KiB,
    # as a full disk would: in a child process, so the limit does not reach pytest.
    code = """
        import resource, signal, sys
        from pathlib import Path
        from ocb_events.errors import WorkspaceError
        from workspace_sync import write_workspace_file
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            write_workspace_file(Path(sys.argv[1]), sys.argv[2], "x" * 100_000)
        except WorkspaceError as exc:
            print(exc.message)
    """
    before = listing(ws)
    out, err = run_python(code, str(ws), LOG).communicate(timeout=60)
    assert out == f"cannot write {LOG}: File too large; the file is unchanged\n", err
    assert listing(ws) == before


def test_a_killed_writers_temp_file_is_swept_on_the_next_write_and_nothing_else(
    ws: Path,
) -> None:
    code = """
        import sys
        from pathlib import Path
        from workspace_sync.writes import _open_temp
        fd, tmp = _open_temp(Path(sys.argv[1]), "2026-11-20.md", 0o600)
        print(tmp.name, flush=True)
        sys.stdin.read()
    """
    lookalikes = [".2026-11-20.md.tmp", ".notes.md.ocb-zzzzzzzz.tmp", "a.ocb-0123abcd.tmp"]
    for name in lookalikes:
        (ws / "memory" / name).write_text("a user's file\n")
    child = run_python(code, str(ws / "memory"))
    try:
        assert child.stdout is not None
        held = child.stdout.readline().strip()
        write_workspace_file(ws, LOG, NEW)  # a live writer's temp file is left alone
        assert names(ws / "memory") == sorted([*lookalikes, "2026-11-20.md", held])
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=60)
    write_workspace_file(ws, LOG, OLD)
    assert names(ws / "memory") == sorted([*lookalikes, "2026-11-20.md"])
    assert (ws / LOG).read_text() == OLD
    assert all((ws / "memory" / n).read_text() == "a user's file\n" for n in lookalikes)
    assert sweep_temp_files(ws / "memory") == []


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to own files of others")


@needs_root
def test_root_keeps_the_owner_and_group_of_a_file_of_another_user(ws: Path) -> None:
    os.chown(ws / LOG, 4242, 4343)
    os.chmod(ws / LOG, 0o664)
    write_workspace_file(ws, LOG, NEW)
    st = (ws / LOG).stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4242, 4343, 0o664)


@pytest.fixture
def shared() -> Iterator[Path]:
    """A workspace every user may write (pytest's own temp directories are 0700)."""
    top = Path(tempfile.mkdtemp(prefix="ocb-shared-"))
    try:
        (top / "memory").mkdir()
        (top / LOG).write_text(OLD)
        for p in (top, top / "memory"):
            os.chmod(p, 0o777)
        os.chmod(top / LOG, 0o666)
        yield top
    finally:
        shutil.rmtree(top)


@needs_root
@pytest.mark.parametrize(
    ("owner", "message", "hint"),
    [
        (
            (0, 0),
            "it belongs to uid 0 and a rewrite would make it uid 65534's",
            "run as the file's owner, or chown it to this user",
        ),
        (
            (65534, 0),
            "its group 0 is not one of this user's groups",
            "run as a member of that group, or chgrp the file",
        ),
    ],
    ids=["owner", "group"],
)
def test_another_user_may_not_take_over_a_file_it_can_write(
    shared: Path, owner: tuple[int, int], message: str, hint: str
) -> None:
    ws = shared
    os.chown(ws / LOG, *owner)
    code = """
        import os, sys
        from pathlib import Path
        from ocb_events.errors import WorkspaceError
        from workspace_sync import write_workspace_file
        os.setgid(65534)
        os.setgroups([])
        os.setuid(65534)
        try:
            write_workspace_file(Path(sys.argv[1]), sys.argv[2], "mine")
        except WorkspaceError as exc:
            print(exc.message)
            print(exc.hint)
    """
    before = listing(ws)
    out, err = run_python(code, str(ws), LOG).communicate(timeout=60)
    assert out == f"will not write {LOG}: {message}; nothing was written\n{hint}\n", err
    assert listing(ws) == before
