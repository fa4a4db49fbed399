"""Walking a workspace for the files a brain indexes.

Markdown (``.md``, ``.markdown``) and plain text (``.txt``) files are read. Build,
dependency and cache directories (``SKIP_DIRS``), symlinked directories, binary files
and files that are not UTF-8 are skipped and listed with a reason (a directory once,
not each file inside it). Hidden files and directories (``.git``, ``.obsidian`` ...)
are skipped without being listed, as tools keep their state there. Symlinked
directories are never followed, and a symlinked file is read only when it resolves
inside the workspace.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

import msgspec

from ocb_events.errors import WorkspaceError

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


def _read(root: Path, full: Path, rel: str) -> FileText | Skipped:
    if full.is_symlink():
        try:
            target = full.resolve(strict=True)
        except (OSError, RuntimeError):
            return Skipped(rel, "broken symlink")
        if not target.is_relative_to(root):
            return Skipped(rel, "symlink points outside the workspace")
    try:
        data = full.read_bytes()
    except OSError as exc:
        return Skipped(rel, f"unreadable ({exc.strerror or exc})")
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


def _walk(root: Path, top: Path) -> Iterator[FileText | Skipped]:
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
            yield _read(root, full, full.relative_to(root).as_posix())


def _split(found: Iterable[FileText | Skipped]) -> tuple[list[FileText], list[Skipped]]:
    files: list[FileText] = []
    skipped: list[Skipped] = []
    for got in found:
        (files if isinstance(got, FileText) else skipped).append(got)  # type: ignore[arg-type]
    files.sort(key=lambda f: f.path)
    skipped.sort(key=lambda s: s.path)
    return files, skipped


def scan_workspace(root: Path) -> tuple[list[FileText], list[Skipped]]:
    """Every indexable file under ``root``, sorted by path, and what was skipped.

    Raises:
        WorkspaceError: ``root`` is missing or is not a directory.
    """
    root = _root(root)
    return _split(_walk(root, root))


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
    root: Path, paths: Collection[str], known: Collection[str]
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
                found.update((got.path, got) for got in _walk(root, full))
        elif indexable(rel) and (full.is_file() or full.is_symlink()):
            found[rel] = _read(root, full, rel)
    scope.update(found)
    return (*_split(found.values()), frozenset(scope))


def read_text(root: Path, rel: str) -> FileText | Skipped:
    """One workspace file as a scan reads it (``rel`` is its posix path)."""
    root = Path(root).resolve()
    return _read(root, root / rel, rel)
