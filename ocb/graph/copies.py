"""Which files a machine records when several machines hold copies of one workspace
and share one log (``ocb init --log URL``).

A machine records a file only when *its own copy* changed since it last synced that
file. Each brain keeps the content hash of every file as it last synced it (its
*base*, ``sync-base.json``); a sync compares three hashes per path: this copy's, the
base, and the log's (the last content any machine recorded):

================================  =========================================
this copy vs the log              what is recorded
================================  =========================================
same content                      nothing (another machine recorded it: the
                                  same content is never recorded twice)
differs, copy equals its base     nothing: this copy is older than the log's
                                  record (changed on another machine); the
                                  file is reported as skipped until the copy
                                  is updated or edited here
differs, copy changed since base  the change, against the log's record (the
                                  latest edit wins)
only here, never synced here      the new file
only here, the log removed it     nothing while the copy equals its base
only in the log, never here       nothing (another machine's file, kept)
only in the log, base = log's     the removal (this copy deleted it)
only in the log, base differs     nothing (changed elsewhere after it was
                                  deleted here; kept)
================================  =========================================

So a copy that is merely behind never writes its older version back, and two copies
that differ never flip a file's chunks back and forth: only a real local edit is
recorded, once. A brain on its own log (no sharing) records every difference, as
before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from ocb.shared_log import location, read_bases
from ocb.store import Store
from workspace_sync.scan import FileText, Skipped

__all__ = ["BEHIND", "ELSEWHERE", "REMOVED_ELSEWHERE", "Screened", "screen", "screen_copy"]

BEHIND = "changed on another machine: this copy is older than the log's record"
ELSEWHERE = "only in another machine's copy"
REMOVED_ELSEWHERE = "removed on another machine"


class Screened(msgspec.Struct, frozen=True):
    """The files a sync may record, the ones it leaves (as skipped, with why), and
    the bases to keep once it is recorded."""

    files: list[FileText]
    skipped: list[Skipped]
    bases: dict[str, str]


def screen(
    files: Sequence[FileText],
    skipped: Sequence[Skipped],
    logged: Mapping[str, str],
    bases: Mapping[str, str],
    scope: frozenset[str] | None = None,
) -> Screened:
    """Apply the table of the module docstring.

    Args:
        files: this copy's files (of ``scope`` when given).
        skipped: files the scan skipped (kept as they are).
        logged: the content hash the log holds of each path.
        bases: the content hash of each path as this machine last synced it.
        scope: the paths a partial sync covers (None: all).
    """
    keep: list[FileText] = []
    left = list(skipped)
    after = dict(bases)
    for f in files:
        log_hash, base = logged.get(f.path), bases.get(f.path)
        if log_hash != f.content_hash and base == f.content_hash:
            left.append(Skipped(f.path, BEHIND if log_hash else REMOVED_ELSEWHERE))
            continue
        keep.append(f)
        after[f.path] = f.content_hash
    here = {f.path for f in files} | {s.path for s in skipped}
    for path in sorted(logged):
        if path in here or (scope is not None and path not in scope):
            continue
        base = bases.get(path)
        if base is None or base != logged[path]:
            left.append(Skipped(path, ELSEWHERE if base is None else BEHIND))
        else:
            after.pop(path, None)  # removed here: recorded
    return Screened(keep, left, after)


def screen_copy(
    store: Store,
    files: Sequence[FileText],
    skipped: Sequence[Skipped],
    scope: frozenset[str] | None,
) -> Screened | None:
    """``screen`` for the brain of ``store`` when its log is shared (None: it is not,
    and a sync records every difference)."""
    if location(store.path) is None:
        return None
    logged = {path: entry.content_hash for path, entry in store.graph.files.items()}
    return screen(files, skipped, logged, read_bases(store.path), scope)
