"""Reading lines of the brain's workspace for a client (``memory_get``): only a file
the brain indexes, its secrets redacted as the brain redacts them."""

from __future__ import annotations

from pathlib import Path

from ocb.settings import Indexing
from ocb.store import Store
from ocb_events.errors import WorkspaceError
from workspace_sync.reads import Excerpt, read_lines

__all__ = ["read_workspace_lines"]


def read_workspace_lines(
    store: Store, rel: str, start: int = 1, lines: int | None = None
) -> Excerpt:
    """Lines of the file ``rel`` of the brain's workspace (``workspace_sync.reads``: at
    most 2,000 from ``start``), secrets redacted as the brain redacts them.

    Only a file the brain indexes is read, checked on the file the path leads to: a
    regular file inside the workspace that a scan reads (not hidden, not under a build
    directory, a text suffix, one link, within ``indexing.max_file_bytes``) and that
    the graph holds.

    Raises:
        WorkspaceError: the brain has no workspace, or ``rel`` is refused (one line:
            empty, absolute, ``..``, a symlink out or to a file the brain does not
            index, not a regular file, hard-linked, binary, too large, not indexed).
        InputError: ``start`` or ``lines`` is below 1, or ``start`` is past the end.
    """
    root = store.workspace
    if not root:
        raise WorkspaceError("this brain has no workspace to read", "ocb init --workspace DIR")
    scanner = store.secrets()
    return read_lines(
        Path(root), rel, start, lines,
        indexed=store.graph.files,
        max_bytes=store.setting(Indexing).max_file_bytes,
        redact=lambda t: scanner.redact(t).text,
    )  # fmt: skip
