"""The ``bank/`` pages of a workspace as reflect reads and writes them: their texts,
the paths that name one file (a symlink and its target are both read), and the checks
made on every write before any is written.

NOTE: reflect must never write outside ``bank/``; ``write_pages`` checks every path,
symlinks resolved, before it writes anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from ocb_events.errors import WorkspaceError
from workspace_sync import FileText, read_text, writable_target, write_workspace_file

OPINIONS = "bank/opinions.md"
ENTITIES = "bank/entities/"


class FileWrite(msgspec.Struct, frozen=True):
    """A bank file's new text, and the text it was decided on (None: a new file)."""

    path: str
    before: str | None
    text: str


def bank_texts(root: Path) -> dict[str, str | None]:
    """The texts of ``bank/opinions.md`` and ``bank/entities/*.md`` under ``root``
    (None for a page that exists but cannot be read as UTF-8 text)."""
    bank = root / "bank"
    out: dict[str, str | None] = {}
    pages = sorted((bank / "entities").glob("*.md")) if (bank / "entities").is_dir() else []
    for p in [bank / "opinions.md", *pages]:
        if p.exists() or p.is_symlink():
            rel = p.relative_to(root).as_posix()
            got = read_text(root, rel)
            out[rel] = got.text if isinstance(got, FileText) else None
    return out


def aliases(root: Path, paths: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """For each of ``paths`` (relative to ``root``) that shares its file with others
    (through symlinks), those others, sorted."""
    by_file: dict[Path, list[str]] = {}
    for rel in sorted(paths):
        by_file.setdefault((root / rel).resolve(), []).append(rel)
    return {
        rel: tuple(x for x in group if x != rel)
        for group in by_file.values()
        if len(group) > 1
        for rel in group
    }


def check_writes(root: Path, writes: Sequence[FileWrite]) -> None:
    """Every write may be made (``writable_target``), lands under bank/ (a symlinked
    page is written through to its target, which must be there too), and its file still
    holds what was decided on. Checked for all the files before any is written."""
    bank = root.resolve() / "bank"
    current = bank_texts(root)
    seen: dict[Path, str] = {}
    for w in writes:
        target = writable_target(root, w.path)
        if target in seen:
            raise WorkspaceError(
                f"reflect will not write {w.path}: it is the same file as {seen[target]}",
                "make one of them a page of its own instead of a link, or use one name"
                " for the entity in the facts",
            )
        seen[target] = w.path
        if not w.path.startswith("bank/") or not target.is_relative_to(bank):
            where = target.relative_to(root.resolve()).as_posix()
            raise WorkspaceError(
                f"reflect will not write {w.path}: it leads to {where}, outside bank/",
                "keep bank/ pages (and what their symlinks point at) under bank/",
            )
        if current.get(w.path) != w.before:
            raise WorkspaceError(
                f"{w.path} changed while reflect ran; nothing was written",
                "run ocb reflect again",
            )


def write_pages(root: Path, writes: Sequence[FileWrite]) -> None:
    """Write the pages (``write_workspace_file``: atomic, mode, owner and symlinks kept)
    once ``check_writes`` passed for all of them.

    Raises:
        WorkspaceError: a write that is refused, or a page that changed meanwhile.
    """
    check_writes(root, writes)
    for w in writes:
        write_workspace_file(root, w.path, w.text)
