"""Rewriting a brain's log in the current storage format (``ocb verify --rewrite``):
compact records and full segments stored compressed (``ocb_events.recode``).

The records keep their seqs, timestamps and content; their bytes change, and with them
the hash chain from the first record whose bytes changed. Afterwards the snapshots from
that seq on and every cache are removed (none would be used anyway: each carries the
chain of the history it was built from), and a ``log_repaired`` event says from which
seq the chain was recomputed, so a head kept elsewhere before the rewrite is known to
name the old bytes.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from ocb.checks.repair import _forget_derived
from ocb.store import Store, Warn
from ocb_events.clock import Clock, system_clock
from ocb_events.errors import BrainNotFound
from ocb_events.recode import Recoded, rewrite_log
from ocb_events.schema import LogRepaired
from replay import SnapshotStore


class BrainRewrite(msgspec.Struct):
    """What ``ocb verify --rewrite`` did: the log's rewrite (``ocb_events.recode``),
    the snapshots removed and the seq of the ``log_repaired`` event (0: no record's
    bytes changed, nothing recorded)."""

    log: Recoded
    snapshots_removed: int
    recorded: int


def rewrite_brain(
    path: Path, *, clock: Clock = system_clock, warn: Warn | None = None
) -> BrainRewrite:
    """Rewrite the log of the brain at ``path`` in the current storage format.

    Raises:
        BrainNotFound: no brain at ``path``.
        BrainLocked: another process writes the brain.
        LogCorrupt: the log does not verify (run ``ocb verify --repair`` first).
    """
    path = Path(path)
    if not (path / "log").is_dir():
        raise BrainNotFound(path)
    got = rewrite_log(path / "log")
    if not got.first_changed:
        return BrainRewrite(got, 0, 0)
    removed = _forget_derived(path, SnapshotStore(path / "snapshots"), got.first_changed)
    event = LogRepaired(
        rebased_from=got.first_changed,
        reason=f"ocb verify --rewrite: {got.changed} records in the compact format",
    )
    with Store(path, clock=clock, warn=warn) as store:
        seq = store.transact("repair", lambda _seq: [event])[0].seq
    return BrainRewrite(got, removed, seq)
