"""The watchfiles loop: batches of workspace changes, as workspace-relative paths.

A change is collected until the workspace has been quiet for ``quiet_ms`` (or for at
most ``max_ms`` while changes keep coming), then the batch is handed on: a save is seen
within about ``quiet_ms``, and a burst (a ``git checkout`` of 1,000 files) comes out as
one batch. What a scan would never index is dropped here (``watched``): hidden files and
directories (``.git``, editors' ``.x.swp``), build and dependency directories, and files
of other suffixes, among them editors' temp and backup files (``x.md.tmp``, ``x.md~``,
``#x.md#``, vim's ``4913`` probe). An editor's atomic save (write a temp file, rename it
over the file) is a change of the file only. A path without a suffix is kept, as it may
be a directory that moved: the sync expands or removes it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePosixPath

import watchfiles

from workspace_sync.scan import SKIP_DIRS, indexable

__all__ = ["watch_batches", "watched"]

_STEP_MS = 50
"""How often the watcher looks at the changes it collected."""


def watched(rel: str) -> bool:
    """Whether a change at workspace-relative posix path ``rel`` can matter to a sync."""
    p = PurePosixPath(rel)
    if p.suffix:
        return indexable(rel)
    # no suffix: perhaps a directory that moved (or vim's 4913 probe, read as nothing)
    return bool(p.parts) and not any(x.startswith(".") or x in SKIP_DIRS for x in p.parts)


def watch_batches(
    root: Path,
    *,
    ignore: Sequence[Path] = (),
    quiet_ms: int = 300,
    max_ms: int = 5000,
    stop: threading.Event | None = None,
    ready: Callable[[], None] | None = None,
) -> Iterator[frozenset[str]]:
    """Batches of the workspace-relative paths that changed (added, modified or
    deleted), until ``stop`` is set. Paths under ``ignore`` (the brain directory when
    it lies inside the workspace) are never reported. ``ready`` is called once the
    watcher listens, before the first batch: a full sync made there misses no change,
    as whatever changes meanwhile comes in the next batch."""
    base = Path(root).resolve()
    skip = tuple(Path(p).resolve() for p in ignore)

    def rel_of(path: str) -> str | None:
        p = Path(path)
        if any(p == s or p.is_relative_to(s) for s in skip) or not p.is_relative_to(base):
            return None
        rel = p.relative_to(base).as_posix()
        return rel if watched(rel) else None

    pending: set[str] = set()
    since = 0.0
    # watchfiles hands over what changed once a step (50 ms) passes without a change,
    # and an empty set once quiet_ms pass without any: that ends a batch
    for changes in watchfiles.watch(
        base,
        watch_filter=lambda _change, path: rel_of(path) is not None,
        step=min(_STEP_MS, quiet_ms),
        debounce=max_ms,
        stop_event=stop,
        rust_timeout=quiet_ms,
        yield_on_timeout=True,
        raise_interrupt=False,
    ):
        if ready is not None:
            ready()
            ready = None
        batch = {r for _, path in changes if (r := rel_of(path)) is not None}
        if batch:
            since = since if pending else time.monotonic()
            pending |= batch
            if (time.monotonic() - since) * 1000 < max_ms:
                continue
        if pending:
            yield frozenset(pending)
            pending = set()
    if pending:  # stopped while changes were settling
        yield frozenset(pending)
