"""Taking a fact back out of the workspace (``ocb retract --fact``): its bullet, with its
continuation lines, is removed from the file that holds it and the brain syncs, so the
fact is retired (its history stays in the log; ``ocb forget --fact`` erases that too).
Meant for a claim an assistant made that turned out wrong, it takes any current fact."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec

from ocb.graph.sync import sync
from ocb.settings import Indexing
from ocb.store import Store
from ocb_events.errors import InputError, OcbError, WorkspaceError, unknown
from projections.memory import Fact, State as MemoryState
from workspace_sync import Skipped, read_text, writable_target, write_workspace_file

__all__ = ["FactRetraction", "retract_fact"]


class FactRetraction(msgspec.Struct):
    """A fact taken back: its id, where it was, the lines removed, whether it was a
    claim (what an assistant said), and whether anything was written (not on a dry run)."""

    fact_id: str
    source: str
    path: str
    removed: str
    speaker: str
    written: bool


def _fact(store: Store, fact_id: str) -> Fact:
    """The current fact ``fact_id``.

    Raises:
        InputError: no current fact has that id (close ids named).
    """
    mem: MemoryState = store.state("memory")
    f = mem.active(fact_id)
    if f is None:
        current = sorted(i for ff in mem.files.values() for i in ff.ids)
        raise unknown("fact", fact_id, current, "list facts and their ids with ocb recall --json")
    return f


def _without(store: Store, root: Path, f: Fact) -> tuple[str, str]:
    """The file of ``f`` without the fact's lines, and those lines.

    Raises:
        WorkspaceError: the file cannot be read, or its lines are not the fact's any more.
    """
    got = read_text(root, f.path, max_bytes=store.setting(Indexing).max_file_bytes)
    if isinstance(got, Skipped):
        raise WorkspaceError(f"cannot read {f.path}: {got.reason}", "fix or move that file")
    lines = got.text.splitlines(keepends=True)
    span = lines[f.start_line - 1 : f.end_line]
    raw = "\n".join(line.rstrip("\r\n") for line in span)
    if hashlib.blake2b(raw.encode(), digest_size=8).hexdigest() != f.text_hash:
        raise WorkspaceError(
            f"{f.path} changed since fact {f.id} was recorded; nothing was written",
            "let the brain catch up (ocb init, or a running daemon), then retract it again",
        )
    kept = lines[: f.start_line - 1] + lines[f.end_line :]
    return "".join(kept), raw


def retract_fact(
    store: Store, fact_id: str, *, dry_run: bool = False, actor: str = "cli"
) -> FactRetraction:
    """Remove the bullet of the current fact ``fact_id`` from its workspace file and
    record the sync (cause ``retract``, as ``actor``); ``dry_run`` writes nothing.

    Raises:
        InputError: an unknown fact, or a brain opened as of a past point.
        WorkspaceError: no workspace, or the file changed or cannot be written.
    """
    if store.as_of is not None:
        raise InputError(
            f"this brain is opened as of seq {store.as_of}; a retraction writes",
            "drop `as_of` to retract",
            param="as_of",
        )
    store.load("config", "graph", "vectors", "memory")
    f = _fact(store, fact_id)
    root = Path(store.workspace)
    text, removed = _without(store, root, f)
    report = FactRetraction(f.id, f.source, f.path, removed, f.speaker, not dry_run)
    if dry_run:
        return report
    writable_target(root, f.path)  # a refusal comes before anything is written
    write_workspace_file(root, f.path, text)
    try:
        sync(store, root, cause="retract", actor=actor)
    except OcbError as exc:
        raise WorkspaceError(
            f"{f.path} no longer holds fact {f.id}, but that was not recorded: {exc.message}",
            "free disk space, then run ocb init to record it",
        ) from exc
    return report
