"""Rebuilding projections from the log: full folds, snapshots, snapshot + tail loads."""

from replay.rebuild import PROJECTIONS, ROUTES, fold, rebuild, snapshot_bytes
from replay.snapshots import SnapshotInfo, SnapshotStore, load_states
from replay.timetravel import iso, parse_time, resolve_point, seq_at_time

__all__ = [
    "PROJECTIONS",
    "ROUTES",
    "SnapshotInfo",
    "SnapshotStore",
    "fold",
    "iso",
    "load_states",
    "parse_time",
    "rebuild",
    "resolve_point",
    "seq_at_time",
    "snapshot_bytes",
]
