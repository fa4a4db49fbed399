"""Writing a file of the user's workspace without damaging it.

``write_workspace_file`` is the one way the brain writes into a workspace (``retain``,
``reflect``). The file keeps what the user gave it:

- **atomic**: the text goes to a temp file in the file's own directory, is fsynced and
  renamed over the file, and the directory is fsynced, so a crash leaves the old text
  or the new one, never half of it;
- **mode, owner and group** are copied from the file it replaces (a new file gets what
  a plain ``open()`` gives under the process umask);
- **a symlink stays a symlink**: the text is written to its target when that resolves
  inside the workspace; a broken link or one that leads out is refused;
- what cannot be kept is refused before anything is written, with one ``WorkspaceError``
  naming the file and the fix: a path that leaves the workspace, a symlinked directory
  on the way, a hard-linked file, a file of another owner the process cannot give back.

Temp files are named ``.<name>.ocb-<8 hex>.tmp`` and held under an exclusive ``flock``
while they exist. One that fails is removed at once; one left by a killed process (its
lock died with it) is swept the next time anything is written into that directory.
Nothing else is ever removed.
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
from pathlib import Path, PurePosixPath

from ocb_events.errors import WorkspaceError

_TEMP = re.compile(r"^\..*\.ocb-[0-9a-f]{8}\.tmp$", re.DOTALL)
_NAME_MAX = 200  # bytes of the file name in a temp name: room for the rest within 255


def _refuse(rel: str, why: str, fix: str) -> WorkspaceError:
    return WorkspaceError(f"will not write {rel}: {why}; nothing was written", fix)


def _inside(root: Path, rel: str) -> Path:
    """``root / rel`` after checking ``rel`` names a file below ``root`` through plain
    directories only (a scan does not read through symlinked directories)."""
    pure = PurePosixPath(rel)
    if not pure.parts or pure.is_absolute() or ".." in pure.parts:
        raise _refuse(
            rel, "the path leaves the workspace", "give a path inside it, without .. or a leading /"
        )
    here = root
    for part in pure.parts[:-1]:
        here = here / part
        if here.is_symlink():
            sub = here.relative_to(root).as_posix()
            raise _refuse(
                rel,
                f"{sub} is a symlinked directory",
                f"make {sub} a plain directory of the workspace",
            )
        if here.exists() and not here.is_dir():
            sub = here.relative_to(root).as_posix()
            raise _refuse(rel, f"{sub} is a file, not a directory", f"move {sub} aside")
    return here / pure.name


def _followed(root: Path, rel: str, full: Path) -> Path:
    """The file a symlink leads to, when it is inside the workspace."""
    try:
        target = full.resolve(strict=True)
    except (OSError, RuntimeError):
        raise _refuse(
            rel,
            "it is a broken symlink",
            "point the link at a file inside the workspace, or remove it",
        ) from None
    if not target.is_relative_to(root):
        raise _refuse(
            rel,
            f"it is a symlink to {target}, outside the workspace",
            "replace the link with a copy of the file, or link to a file inside the workspace",
        )
    return target


def _check_existing(rel: str, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(rel, "it is not a regular file", f"move {rel} aside")
    if st.st_nlink > 1:
        # NOTE: the rename that makes the write atomic gives the path a new inode, so
        # the other names would keep the old text. Writing in place would keep them but
        # could leave a half-written file, and hard-link backups (rsnapshot, cp -al)
        # would be rewritten behind the user's back. Neither is right for every user,
        # so refuse and let the user choose.
        raise _refuse(
            rel,
            f"it has {st.st_nlink} hard links and a rewrite would break them",
            "make the other names symlinks to it (ln -sf), or give it its own copy",
        )
    me = os.geteuid()
    if me == 0:
        return
    # NOTE: a process that is not root cannot give a file to another user, so a
    # rename would silently make a shared file this user's. Writing in place would keep
    # the owner but not atomicity; the user can fix ownership in one command.
    if st.st_uid != me:
        raise _refuse(
            rel,
            f"it belongs to uid {st.st_uid} and a rewrite would make it uid {me}'s",
            "run as the file's owner, or chown it to this user",
        )
    if st.st_gid != os.getegid() and st.st_gid not in os.getgroups():
        raise _refuse(
            rel,
            f"its group {st.st_gid} is not one of this user's groups",
            "run as a member of that group, or chgrp the file",
        )


def writable_target(root: Path, rel: str) -> Path:
    """The real file a write of ``rel`` under ``root`` would replace (a symlink's
    target), after every check the write makes; nothing is written.

    Raises:
        WorkspaceError: the write would leave the workspace or lose what the file is
            (see the module docstring).
    """
    try:
        root = Path(root).resolve()
        full = _inside(root, rel)
        target = _followed(root, rel, full) if full.is_symlink() else full
        try:
            st = os.stat(target, follow_symlinks=False)
        except FileNotFoundError:
            return target
    except OSError as exc:
        why = f"it cannot be examined ({exc.strerror or exc})"
        raise _refuse(rel, why, "fix the permissions of its directories") from exc
    _check_existing(rel, st)
    return target


def _open_temp(folder: Path, name: str, mode: int) -> tuple[int, Path]:
    """A new temp file of ours in ``folder`` (``mode`` under the umask), open for
    writing and locked."""
    short = os.fsdecode(os.fsencode(name)[:_NAME_MAX])
    while True:
        tmp = folder / f".{short}.ocb-{os.urandom(4).hex()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
        except FileExistsError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            same = os.stat(tmp, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        if same:
            return fd, tmp
        os.close(fd)  # a sweep took it between create and lock: take another name


def sweep_temp_files(folder: Path) -> list[Path]:
    """Remove the temp files of ours in ``folder`` that no live writer holds (left by a
    process that was killed); returns them. Files of any other name are never touched."""
    try:
        names = sorted(n for n in os.listdir(folder) if _TEMP.match(n))
    except OSError:
        return []
    swept = []
    for name in names:
        path = folder / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue  # gone, or a symlink, or unreadable: not ours to judge
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino:
                path.unlink()
                swept.append(path)
        except OSError:
            continue  # held by a live writer, or already gone
        finally:
            os.close(fd)
    return swept


def _keep_metadata(fd: int, old: os.stat_result) -> None:
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) != (old.st_uid, old.st_gid):
        os.fchown(fd, old.st_uid, old.st_gid)
    os.fchmod(fd, stat.S_IMODE(old.st_mode))  # after chown, which clears set-id bits


def _sync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot fsync a directory; the rename is done
    finally:
        os.close(fd)


def _replace(target: Path, text: str) -> None:
    folder = target.parent
    folder.mkdir(parents=True, exist_ok=True)
    sweep_temp_files(folder)
    try:
        old: os.stat_result | None = os.stat(target, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    # a file being replaced: the temp file starts private and takes its owner and mode
    # before it holds a byte, so the new text is never readable by more than the old;
    # a new file gets what open() gives under the umask
    fd, tmp = _open_temp(folder, target.name, 0o600 if old is not None else 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            if old is not None:
                _keep_metadata(fh.fileno(), old)
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
            os.replace(tmp, target)  # while locked, so no sweep can take it first
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_dir(folder)


def write_workspace_file(root: Path, rel: str, text: str) -> Path:
    """Replace the workspace file ``rel`` (posix, relative to ``root``) with ``text``
    (UTF-8, newlines as given), atomically, keeping its mode, owner, group and
    symlink; a new file and its directories are created. Returns the real path written.

    Example:
        >>> write_workspace_file(ws, "memory/2026-11-20.md", "# 2026-11-20\\n")  # doctest: +SKIP

    Raises:
        WorkspaceError: the write is refused (see ``writable_target``) or fails; the file
            is then unchanged and no temp file is left.
    """
    target = writable_target(root, rel)
    try:
        _replace(target, text)
    except UnicodeEncodeError as exc:
        raise WorkspaceError(
            f"cannot write {rel}: the text has characters that are not valid UTF-8"
            f" ({exc.object[exc.start : exc.end]!r}); the file is unchanged",
            "remove those characters (they come from input in another encoding) and retry",
        ) from exc
    except OSError as exc:
        raise WorkspaceError(
            f"cannot write {rel}: {exc.strerror or exc}; the file is unchanged",
            "fix the permissions or free disk space, then retry",
        ) from exc
    return target
