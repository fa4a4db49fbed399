"""Reading lines of a workspace file for a client (``memory_get``), confined to the
workspace.

NOTE: the path comes from a client (a model, over MCP): it is refused when it is empty,
absolute, has a ``..`` part, resolves (through any symlink) outside the workspace, or
names a file the brain never indexes (hidden files such as ``.env``, ``.git``, build and
dependency folders, other suffixes). The caller passes the brain's secret redaction, so a
read shows what the brain recorded, never a secret it held back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ocb_events.errors import InputError, WorkspaceError
from workspace_sync.scan import indexable

__all__ = ["Excerpt", "read_lines"]

MAX_LINES = 2000
"""The most lines one read returns (a client pages on with ``start``)."""


@dataclass(frozen=True)
class Excerpt:
    """Lines ``start_line`` .. ``end_line`` (1-based, inclusive) of the workspace file
    ``path`` (posix, relative); ``total_lines`` the file's count. An empty excerpt (a
    start past the end) has ``end_line == start_line - 1``."""

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


def confined(root: Path, rel: str) -> Path:
    """The real file ``rel`` names below ``root``.

    Raises:
        WorkspaceError: ``rel`` is empty, absolute, has a ``..`` part, resolves outside
            ``root`` (a symlink out), does not exist, or is not a file.
    """
    pure = PurePosixPath(rel)
    if not rel or not pure.parts or pure.is_absolute():
        raise _refuse(rel, "the path is not relative to the workspace")
    if ".." in pure.parts:
        raise _refuse(rel, "the path leaves the workspace (..)")
    if not indexable(pure.as_posix()):
        raise _refuse(rel, "the brain does not index this file (hidden, build or not text)")
    base = root.resolve()
    try:
        real = (base / pure).resolve(strict=True)
    except FileNotFoundError:
        raise WorkspaceError(
            f"no file {rel!r} in the workspace", "take the path from a search result"
        ) from None
    except (OSError, RuntimeError) as exc:
        raise _refuse(rel, f"it cannot be resolved ({exc})") from None
    if not real.is_relative_to(base):
        raise _refuse(rel, "it is a symlink that leads outside the workspace")
    if not real.is_file():
        raise _refuse(rel, "it is not a file")
    return real


def read_lines(
    root: Path,
    rel: str,
    start: int = 1,
    lines: int | None = None,
    *,
    redact: Callable[[str], str] = lambda text: text,
) -> Excerpt:
    """Lines ``start`` .. ``start + lines - 1`` of the workspace file ``rel`` (at most
    ``MAX_LINES``; ``lines`` None: to the end, within that cap), decoded as UTF-8 with
    undecodable bytes replaced, and the whole file passed through ``redact`` first
    (which keeps line breaks, so line numbers hold).

    Raises:
        WorkspaceError: the path is refused (see ``confined``).
        InputError: ``start`` or ``lines`` is below 1.
    """
    if start < 1:
        raise InputError(f"from must be 1 or more, not {start}", "lines are numbered from 1")
    if lines is not None and lines < 1:
        raise InputError(f"lines must be 1 or more, not {lines}", "omit lines to read to the end")
    real = confined(root, rel)
    try:
        text = real.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise _refuse(rel, f"it cannot be read ({exc.strerror})") from None
    all_lines = redact(text).splitlines()
    count = min(lines if lines is not None else MAX_LINES, MAX_LINES)
    chosen = all_lines[start - 1 : start - 1 + count]
    return Excerpt(
        path=PurePosixPath(rel).as_posix(),
        start_line=start,
        end_line=start - 1 + len(chosen),
        total_lines=len(all_lines),
        text="\n".join(chosen),
    )
