"""Walking a workspace for the files a brain indexes.

Markdown (``.md``, ``.markdown``) and plain text (``.txt``) files are read. Build,
dependency and cache directories (``SKIP_DIRS``), symlinked directories, binary files
and files that are not UTF-8 are skipped and listed with a reason (a directory once,
not each file inside it). Hidden files and directories (``.git``, ``.obsidian`` ...)
are skipped without being listed, as tools keep their state there. Symlinked
directories are never followed, and a symlinked file is read only when it resolves to
a file a scan reads itself: inside the workspace, not hidden, not under a build or
dependency directory, with a text suffix (so ``notes/env.md -> ../.env`` is skipped).

NOTE: a file is read only when it is a regular file with one link, not over the size
limit. Anything else (a FIFO, a socket, a device, whatever name or symlink reaches it)
is skipped with its reason and never opened for long: the path is ``stat``-ed first,
then opened with ``O_NONBLOCK`` (a FIFO's open never waits for a writer) and
``O_NOFOLLOW`` (the link was resolved already), and the open descriptor is
``fstat``-ed again, so a file swapped for a FIFO between the two is caught too. A file
with more than one hard link is skipped, as its other names may lie outside the
workspace (and the brain's writes refuse it too). A file over ``max_bytes`` is skipped
before its bytes are read.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

import msgspec

from ocb_events.errors import WorkspaceError

MAX_FILE_BYTES = 4_000_000
"""The default size limit of a file a scan reads (``indexing.max_file_bytes``)."""
TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt"})
_BUILD, _DEPS = "build output directory", "dependency directory"
SKIP_DIRS: dict[str, str] = {
    "__pycache__": "cache directory",
    "build": _BUILD,
    "dist": _BUILD,
    "node_modules": _DEPS,
    "out": _BUILD,
    "site-packages": _DEPS,
    "target": _BUILD,
    "venv": _DEPS,
}
"""Directories never walked, by name, with the reason listed in ``skipped``."""


class FileText(msgspec.Struct, frozen=True):
    """A readable workspace file: posix path relative to the root, text and hash."""

    path: str
    text: str
    content_hash: str

    @property
    def markdown(self) -> bool:
        return not self.path.endswith(".txt")


class Skipped(msgspec.Struct, frozen=True):
    """A file that was not indexed, and why."""

    path: str
    reason: str


MISSING = "no such file"
"""The reason a file that is gone is skipped with."""

_KINDS = (
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISDIR, "directory"),
    (stat.S_ISLNK, "symlink"),
)
_OUT = "symlink points outside the workspace"
_OPEN = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20


def _size(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:.1f} MB"
    return f"{n / 1e3:.1f} kB" if n >= 1000 else f"{n} bytes"


def _refused(rel: str, st: os.stat_result, max_bytes: int) -> Skipped | None:
    """Why the file of ``st`` is not read, or None: not a regular file, hard-linked,
    or over ``max_bytes``."""
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "unknown kind")
        return Skipped(rel, f"not a regular file ({kind})")
    if st.st_nlink > 1:
        return Skipped(
            rel, f"it has {st.st_nlink} hard links (another name may lie outside the workspace)"
        )
    if st.st_size > max_bytes:
        return Skipped(
            rel,
            f"larger than the size limit ({_size(st.st_size)} > {_size(max_bytes)}, "
            "indexing.max_file_bytes)",
        )
    return None


def _target(root: Path, full: Path, rel: str) -> Path | Skipped:
    """The real file to open for ``full``: itself, or the file its symlink leads to
    when a scan would read that file under its own name."""
    try:
        folder = full.parent.resolve(strict=True)
        if folder != full.parent:  # a scan never walks a symlinked directory
            inside = folder.is_relative_to(root)
            return Skipped(rel, "inside a symlinked directory" if inside else _OUT)
        if not full.is_symlink():
            return full
        target = full.resolve(strict=True)
    except FileNotFoundError:
        return Skipped(rel, "broken symlink" if full.is_symlink() else MISSING)
    except (OSError, RuntimeError):
        return Skipped(rel, "broken symlink")
    if not target.is_relative_to(root):
        return Skipped(rel, _OUT)
    to = target.relative_to(root).as_posix()
    if not indexable(to):
        return Skipped(rel, f"symlink to {to}, a file the brain does not index")
    return target


def _load(path: Path, rel: str, max_bytes: int) -> bytes | Skipped:
    """The bytes of the regular file ``path`` (never a symlink), or why not: it is
    checked before it is opened, opened without blocking, and checked again open."""
    try:
        refused = _refused(rel, os.stat(path, follow_symlinks=False), max_bytes)
        if refused is not None:
            return refused
        fd = os.open(path, _OPEN)
    except FileNotFoundError:
        return Skipped(rel, MISSING)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # became a symlink since it was resolved
            return Skipped(rel, "not a regular file (symlink)")
        return Skipped(rel, f"unreadable ({exc.strerror or exc})")
    try:
        st = os.fstat(fd)
        refused = _refused(rel, st, max_bytes)
        if refused is not None:
            return refused
        parts: list[bytes] = []
        got = 0
        step = st.st_size + 1  # the whole file in one read (a bigger buffer than the file
        # would be shrunk after the read, and such holes add up over many files)
        while got <= max_bytes:  # it may grow while it is read: never past the limit
            part = os.read(fd, min(step, max_bytes + 1 - got))
            step = _CHUNK
            if not part:
                break
            parts.append(part)
            got += len(part)
    except OSError as exc:
        return Skipped(rel, f"unreadable ({exc.strerror or exc})")
    finally:
        os.close(fd)
    if got > max_bytes:
        return Skipped(rel, f"larger than the size limit ({_size(max_bytes)}, grew while read)")
    return b"".join(parts)


def _read(root: Path, full: Path, rel: str, max_bytes: int) -> FileText | Skipped:
    target = _target(root, full, rel)
    if isinstance(target, Skipped):
        return target
    data = _load(target, rel, max_bytes)
    if isinstance(data, Skipped):
        return data
    if b"\x00" in data[:8192]:
        return Skipped(rel, "binary file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Skipped(rel, "not UTF-8")
    return FileText(rel, text, hashlib.blake2b(data, digest_size=16).hexdigest())


def _root(root: Path) -> Path:
    """The workspace directory, resolved.

    Raises:
        WorkspaceError: ``root`` is missing or is not a directory.
    """
    root = Path(root)
    if not root.exists():
        raise WorkspaceError(
            f"workspace {root} does not exist", "pass the directory that holds your Markdown"
        )
    if not root.is_dir():
        raise WorkspaceError(
            f"workspace {root} is a file, not a directory",
            "pass the directory that holds your Markdown files",
        )
    return root.resolve()


def _walk(root: Path, top: Path, max_bytes: int) -> Iterator[FileText | Skipped]:
    """Every indexable file under ``top`` (inside ``root``), and what is skipped."""
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        base = Path(dirpath)
        keep = []
        for d in sorted(dirnames):
            if d.startswith("."):
                continue
            rel = (base / d).relative_to(root).as_posix()
            if (base / d).is_symlink():
                yield Skipped(rel, "symlinked directory")
            elif d in SKIP_DIRS:
                yield Skipped(rel, SKIP_DIRS[d])
            else:
                keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            if name.startswith(".") or Path(name).suffix.lower() not in TEXT_SUFFIXES:
                continue
            full = base / name
            yield _read(root, full, full.relative_to(root).as_posix(), max_bytes)


def _split(found: Iterable[FileText | Skipped]) -> tuple[list[FileText], list[Skipped]]:
    files: list[FileText] = []
    skipped: list[Skipped] = []
    for got in found:
        (files if isinstance(got, FileText) else skipped).append(got)  # type: ignore[arg-type]
    files.sort(key=lambda f: f.path)
    skipped.sort(key=lambda s: s.path)
    return files, skipped


def scan_workspace(
    root: Path, *, max_bytes: int = MAX_FILE_BYTES
) -> tuple[list[FileText], list[Skipped]]:
    """Every indexable file under ``root``, sorted by path, and what was skipped (a
    file over ``max_bytes`` among them).

    Raises:
        WorkspaceError: ``root`` is missing or is not a directory.
    """
    root = _root(root)
    return _split(_walk(root, root, max_bytes))


def indexable(rel: str) -> bool:
    """Whether a scan would read the file at workspace-relative posix path ``rel``:
    no hidden part, no build or dependency directory, a text suffix."""
    parts = rel.split("/")
    if any(not part or part.startswith(".") for part in parts):
        return False
    if any(part in SKIP_DIRS for part in parts[:-1]):
        return False
    return Path(parts[-1]).suffix.lower() in TEXT_SUFFIXES


def scan_paths(
    root: Path, paths: Collection[str], known: Collection[str], *, max_bytes: int = MAX_FILE_BYTES
) -> tuple[list[FileText], list[Skipped], frozenset[str]]:
    """The files a scan would read among ``paths`` (a directory among them stands for
    every file under it; a path that is gone, for every ``known`` file under it), what
    was skipped, and the scope: every path whose state this answers for (read,
    skipped, or gone from the disk).

    Raises:
        WorkspaceError: ``root`` is missing or is not a directory.
    """
    root = _root(root)
    found: dict[str, FileText | Skipped] = {}
    scope: set[str] = set()
    for rel in sorted(paths):
        full = root / rel
        scope.update(k for k in known if k == rel or k.startswith(rel + "/"))
        if full.is_dir() and not full.is_symlink():
            if indexable(rel + "/x.md"):  # not hidden, not under a skipped directory
                found.update((got.path, got) for got in _walk(root, full, max_bytes))
        elif indexable(rel) and os.path.lexists(full):  # a FIFO too: skipped, with why
            found[rel] = _read(root, full, rel, max_bytes)
    scope.update(found)
    return (*_split(found.values()), frozenset(scope))


def read_text(root: Path, rel: str, *, max_bytes: int = MAX_FILE_BYTES) -> FileText | Skipped:
    """One workspace file as a scan reads it (``rel`` is its posix path, ``max_bytes``
    the size limit), or why a scan skips it (``MISSING`` when it is gone)."""
    root = Path(root).resolve()
    return _read(root, root / rel, rel, max_bytes)
