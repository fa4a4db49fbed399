"""Rebuilding projections from the log: full folds, snapshots, snapshot + tail loads,
and comparing two graph states."""

from replay.diff import TIERS, EdgeChange, GraphDiff, NodeChange, Tiers, diff_graphs, tier_counts
from replay.rebuild import PROJECTIONS, ROUTES, fold, rebuild, snapshot_bytes
from replay.snapshots import SnapshotInfo, SnapshotStore, load_states
from replay.timetravel import iso, parse_time, resolve_point, seq_at_time

__all__ = [
    "EdgeChange",
    "GraphDiff",
    "NodeChange",
    "PROJECTIONS",
    "ROUTES",
    "SnapshotInfo",
    "SnapshotStore",
    "TIERS",
    "Tiers",
    "diff_graphs",
    "fold",
    "iso",
    "load_states",
    "parse_time",
    "rebuild",
    "resolve_point",
    "seq_at_time",
    "snapshot_bytes",
    "tier_counts",
]
