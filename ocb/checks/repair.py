"""Repairing a brain whose log is damaged, lost records or holds records that do not
match their hash chain (``ocb verify --repair``).

The log keeps every intact record and turns each damaged, lost or tampered one into a
tombstone that keeps its seq (``ocb_events.repair``); the brain's snapshots say up to
which seq the log held records even when its own marks are gone. Afterwards the
snapshots from the first changed seq on and every cache are removed (none of them
would be used anyway: each carries the chain of the history it was built from, which
the repaired log no longer has), and a ``log_repaired`` event says what was lost.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from ocb.shared_log import location
from ocb.store import Store, Warn
from ocb_events.clock import Clock, system_clock
from ocb_events.errors import BrainNotFound, InputError
from ocb_events.repair import repair_log
from ocb_events.schema import LogRepaired, SeqRange
from replay import SnapshotStore


class BrainRepair(msgspec.Struct):
    """What ``ocb verify --repair`` did to a brain: as ``ocb_events.repair.RepairReport``
    (``tampered``: the lost ranges whose records did not match their hash chain;
    ``renewed``: the log's marks renewed; ``unconfirmed``: records kept although the
    next one does not link to them), and the snapshots removed."""

    lost: list[tuple[int, int]]
    torn_bytes: int
    rebased_from: int
    segments: list[str]
    snapshots_removed: int
    recorded: int
    """The seq of the ``log_repaired`` event (0 when there was nothing to repair)."""
    tampered: list[tuple[int, int]] = msgspec.field(default_factory=list)
    renewed: list[str] = msgspec.field(default_factory=list)
    unconfirmed: list[int] = msgspec.field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.segments or self.renewed)


def _forget_derived(path: Path, snapshots: SnapshotStore, rebased_from: int) -> int:
    """Remove the snapshots from ``rebased_from`` on (none for 0) and every cache;
    returns how many snapshots went."""
    removed = 0
    for info in sorted(snapshots.directory.glob("*.snap")) if rebased_from else []:
        tail = info.name[-25:-5]
        if tail.isdigit() and int(tail) >= rebased_from:
            info.unlink(missing_ok=True)
            removed += 1
    for cache in sorted((path / "cache").glob("*")) if (path / "cache").is_dir() else []:
        if cache.is_file() and not cache.name.endswith(".lock"):
            cache.unlink(missing_ok=True)
    return removed


def repair_brain(
    path: Path, *, clock: Clock = system_clock, warn: Warn | None = None
) -> BrainRepair:
    """Repair the log of the brain at ``path`` and record what was lost.

    Raises:
        BrainNotFound: no brain at ``path``.
        BrainLocked: another process writes the brain.
        InputError: the brain's log is on PostgreSQL (restore the database instead).
    """
    path = Path(path)
    if location(path) is not None:
        raise InputError(
            f"brain {path} keeps its log on PostgreSQL, and a repair rewrites segments",
            "restore the database from its backup (ocb verify names the first damaged seq)",
        )
    if not (path / "log").is_dir():
        raise BrainNotFound(path)
    snapshots = SnapshotStore(path / "snapshots")
    got = repair_log(path / "log", held=snapshots.newest_seq())
    if not got.changed:
        return BrainRepair([], 0, 0, [], 0, 0)
    removed = _forget_derived(path, snapshots, got.rebased_from)
    renewed = f" (renewed {', '.join(got.renewed)})" if got.renewed else ""
    event = LogRepaired(
        lost=tuple(SeqRange(first=a, last=b) for a, b in got.lost),
        torn_bytes=got.torn_bytes,
        rebased_from=got.rebased_from,
        reason="ocb verify --repair" + renewed,
    )
    with Store(path, clock=clock, warn=warn) as store:
        seq = store.transact("repair", lambda _seq: [event])[0].seq
    return BrainRepair(
        got.lost,
        got.torn_bytes,
        got.rebased_from,
        got.segments,
        removed,
        seq,
        got.tampered,
        got.renewed,
        got.unconfirmed,
    )
