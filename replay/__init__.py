"""Rebuilding projections from the log: full folds, snapshots, snapshot + tail loads."""

from replay.rebuild import PROJECTIONS, ROUTES, fold, rebuild, snapshot_bytes
from replay.snapshots import SnapshotInfo, SnapshotStore, load_states

__all__ = [
    "PROJECTIONS",
    "ROUTES",
    "SnapshotInfo",
    "SnapshotStore",
    "fold",
    "load_states",
    "rebuild",
    "snapshot_bytes",
]
