"""Reading lines of a workspace file for a client (``memory_get``), confined to the
files the brain indexes.

NOTE: the path comes from a client (a model, over MCP) and is checked on what it leads
to, not on its name: it is refused when it is empty, absolute or has a ``..`` part; when
it names a file a scan never reads (hidden files such as ``.env``, ``.git``, build and
dependency folders, other suffixes); when the file it reaches is one a scan skips (a
symlink out of the workspace or to a file the brain does not index, a FIFO, socket or
device, a file with several hard links, a binary or non-UTF-8 file, a file over the
size limit); and when the brain does not index it. The file is read as a scan reads
it (``workspace_sync.scan``: never blocking, never anything but a regular file). The
caller passes the brain's secret redaction, so a read shows what the brain recorded,
never a secret it held back.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ocb_events.errors import InputError, WorkspaceError
from workspace_sync.scan import MAX_FILE_BYTES, MISSING, Skipped, indexable, read_text

__all__ = ["Excerpt", "read_lines"]

MAX_LINES = 2000
"""The most lines one read returns (a client pages on with ``start``)."""


@dataclass(frozen=True)
class Excerpt:
    """Lines ``start_line`` .. ``end_line`` (1-based, inclusive) of the workspace file
    ``path`` (posix, relative); ``total_lines`` the file's count. An empty excerpt (an
    empty file) has ``end_line == start_line - 1``."""

    path: str
    start_line: int
    end_line: int
    total_lines: int
    text: str


def _refuse(rel: str, why: str) -> WorkspaceError:
    return WorkspaceError(
        f"will not read {rel!r}: {why}",
        "give a path relative to the workspace, without .. or a leading /, "
        "as a search result's path shows it",
    )


def _named(rel: str) -> str:
    """``rel`` as a posix path a scan would read, checked on its name alone.

    Raises:
        WorkspaceError: empty, absolute, with a ``..`` part, or a name the brain never
            indexes.
    """
    pure = PurePosixPath(rel)
    if not rel or not pure.parts or pure.is_absolute():
        raise _refuse(rel, "the path is not relative to the workspace")
    if ".." in pure.parts:
        raise _refuse(rel, "the path leaves the workspace (..)")
    if not indexable(pure.as_posix()):
        raise _refuse(rel, "the brain does not index this file (hidden, build or not text)")
    return pure.as_posix()


def _text(root: Path, rel: str, indexed: Container[str], max_bytes: int) -> str:
    """The text of the workspace file ``rel``, read as a scan reads it.

    Raises:
        WorkspaceError: see ``read_lines``.
    """
    name = _named(rel)
    got = read_text(root, name, max_bytes=max_bytes)
    if isinstance(got, Skipped):
        if got.reason == MISSING:
            raise WorkspaceError(
                f"no file {rel!r} in the workspace", "take the path from a search result"
            )
        raise _refuse(rel, got.reason)
    if name not in indexed:
        raise _refuse(rel, "the brain has not indexed this file (skipped, or not synced yet)")
    return got.text


def read_lines(
    root: Path,
    rel: str,
    start: int = 1,
    lines: int | None = None,
    *,
    indexed: Container[str],
    max_bytes: int = MAX_FILE_BYTES,
    redact: Callable[[str], str] = lambda text: text,
) -> Excerpt:
    """Lines ``start`` .. ``start + lines - 1`` of the workspace file ``rel`` (at most
    ``MAX_LINES``; ``lines`` None: to the end, within that cap), the whole file passed
    through ``redact`` first (which keeps line breaks, so line numbers hold).

    Args:
        indexed: the workspace paths the brain indexes (the graph's files).
        max_bytes: the size limit of a file a scan reads.

    Raises:
        WorkspaceError: the path is refused (see the module's note), in one line.
        InputError: ``start`` or ``lines`` is below 1, or ``start`` is past the end of
            the file (an empty file reads from 1).
    """
    if start < 1:
        raise InputError(f"from must be 1 or more, not {start}", "lines are numbered from 1")
    if lines is not None and lines < 1:
        raise InputError(f"lines must be 1 or more, not {lines}", "omit lines to read to the end")
    all_lines = redact(_text(Path(root), rel, indexed, max_bytes)).splitlines()
    if start > max(1, len(all_lines)):
        n = len(all_lines)
        raise InputError(
            f"the file has {n} line{'' if n == 1 else 's'}; from must be at most {n}",
            f"read from a line of the file, e.g. from 1 (total_lines: {n})",
        )
    count = min(lines if lines is not None else MAX_LINES, MAX_LINES)
    chosen = all_lines[start - 1 : start - 1 + count]
    return Excerpt(
        path=PurePosixPath(rel).as_posix(),
        start_line=start,
        end_line=start - 1 + len(chosen),
        total_lines=len(all_lines),
        text="\n".join(chosen),
    )
