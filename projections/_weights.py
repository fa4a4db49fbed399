"""The graph's weight updates folded as arrays: a run of ``EdgesUpdated`` records with
no other graph record between them, applied at once.

Between two other graph records the set of nodes and edges does not change, so a run
of weight updates only moves numbers: each edge's weight (and each node's stop weight)
goes through its deltas in log order, ``w = clip(w + delta, -1, 1)`` one at a time, as
``projections.graph`` folds them one record at a time; every edge a delta touched
takes the seq of the last record that touched it; each node's reward baseline is the
last one recorded. The result is the same float for float, so the snapshot bytes are
the same as the record-by-record fold's.

NOTE: float additions do not associate: every sum here is made in log order, one
delta at a time (``numpy.add.at`` and the per-rank steps below both do), never as a
pairwise or regrouped sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ocb_events.schema import STOP
from projections._graph_state import State

_MARGIN = 1e-9
"""How far below 1 an edge's bound must stay to skip the clipping: far more than the
rounding of a million additions."""
_TAIL = 8
"""Below this many edges still moving, the last deltas go one by one."""
_PADDING = 8
"""How many cells a slot-by-rank matrix of deltas may hold per delta."""


class WeightRun:
    """A run of weight updates, as arrays in log order: ``pair`` (an index into
    ``pairs``, the (source, target) of each edge, STOP for a stop weight), ``delta`` and
    ``seq`` per change, and the last ``baselines`` recorded per node."""

    __slots__ = ("baselines", "delta", "pair", "pairs", "seq")

    def __init__(
        self,
        pairs: Sequence[tuple[str, str]],
        pair: npt.NDArray[np.int64],
        delta: npt.NDArray[np.float64],
        seq: npt.NDArray[np.int64],
        baselines: dict[str, float],
    ) -> None:
        self.pairs = pairs
        self.pair = pair
        self.delta = delta
        self.seq = seq
        self.baselines = baselines


def fold_weights(state: State, run: WeightRun) -> None:
    """Apply ``run`` to ``state`` (in place), as folding its records one by one would."""
    nodes = state.nodes.raw_items()
    for node, value in run.baselines.items():
        if node in nodes:
            state.baseline[node] = value
    if not len(run.pair):
        return
    touched = np.flatnonzero(np.bincount(run.pair, minlength=len(run.pairs)))
    size = int(touched[-1]) + 1
    slots, found, begin = _present(state, run.pairs, touched.tolist())
    start = np.zeros(size)
    valid = np.zeros(size, dtype=bool)
    start[slots], valid[slots] = begin, True
    keep = valid[run.pair]
    pair, delta = run.pair[keep], run.delta[keep]
    weight = _clipped_sums(start, pair, delta)
    last = np.zeros(size, dtype=np.int64)
    np.maximum.at(last, pair, run.seq[keep])
    stop = state.stop
    for target, w, s in zip(found, weight[slots].tolist(), last[slots].tolist(), strict=True):
        if type(target) is str:
            stop[target] = w
        else:
            target.weight, target.last_seq = w, s


def _present(
    state: State, pairs: Sequence[tuple[str, str]], touched: list[int]
) -> tuple[list[int], list[Any], list[float]]:
    """The touched slots whose edge (or node, for a stop weight) the graph holds: each
    with its edge (the node's id for a stop weight) and its weight before the run."""
    nodes = state.nodes.raw_items()
    targets_of, stop_of = state.out.get, state.stop.get
    slots: list[int] = []
    found: list[Any] = []
    begin: list[float] = []
    for i in touched:
        src, dst = pairs[i]
        if dst == STOP:
            if src in nodes:
                slots.append(i)
                found.append(src)
                begin.append(stop_of(src, 0.0))
            continue
        edge = (targets_of(src) or {}).get(dst)
        if edge is not None:
            slots.append(i)
            found.append(edge)
            begin.append(edge.weight)
    return slots, found, begin


def _clipped_sums(
    start: npt.NDArray[np.float64], pair: npt.NDArray[np.int64], delta: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Each slot's ``start`` taken through its deltas in order, clipped to [-1, 1] after
    each. Slots that cannot reach a bound are plain running sums; the others go rank by
    rank. A slot's running sum stays between its start plus all its negative deltas
    and its start plus all its positive ones, whatever their order: when both are
    inside the bounds, no step clips."""
    weight = start.copy()
    high, low = start.copy(), start.copy()
    np.add.at(high, pair, np.maximum(delta, 0.0))
    np.add.at(low, pair, np.minimum(delta, 0.0))
    free = ((high < 1.0 - _MARGIN) & (low > _MARGIN - 1.0))[pair]
    np.add.at(weight, pair[free], delta[free])
    held = ~free
    if held.any() and not _stepped(weight, pair[held], delta[held]):
        _ranked(weight, pair[held], delta[held])
    return weight


def _stepped(
    weight: npt.NDArray[np.float64], pair: npt.NDArray[np.int64], delta: npt.NDArray[np.float64]
) -> bool:
    """The clipped sums, one step per rank over every slot at once: a matrix of each
    slot's k-th delta in row k, a slot with fewer deltas padded with -0.0 (``w + -0.0``
    is ``w``, bit for bit, and a clip leaves a weight already clipped as it is). False,
    doing nothing, when the matrix would be mostly padding (a few slots with many more
    deltas than the others)."""
    counts = np.bincount(pair)
    slots = np.flatnonzero(counts)
    top = int(counts.max())
    if top * len(slots) > _PADDING * len(pair) + 4096:
        return False
    order = _stable_order(pair)
    first = np.cumsum(counts) - counts
    rank = np.empty(len(pair), dtype=np.int64)
    rank[order] = np.arange(len(pair)) - first[pair[order]]
    dense = np.zeros(len(counts), dtype=np.int64)
    dense[slots] = np.arange(len(slots))
    steps = np.full((top, len(slots)), -0.0)
    steps[rank, dense[pair]] = delta
    w = weight[slots]
    for row in steps:
        np.add(w, row, out=w)
        np.clip(w, -1.0, 1.0, out=w)
    weight[slots] = w
    return True


def _ranked(
    weight: npt.NDArray[np.float64], pair: npt.NDArray[np.int64], delta: npt.NDArray[np.float64]
) -> None:
    """The clipped sums, one step per rank: step k applies every slot's k-th delta at
    once (a slot has at most one k-th delta, so a step is one vector operation)."""
    order = _stable_order(pair)
    pair, delta = pair[order], delta[order]
    counts = np.bincount(pair)
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rank = np.arange(len(pair)) - first[pair]
    by_rank = _stable_order(rank)
    bounds = np.concatenate(([0], np.cumsum(np.bincount(rank))))
    slots, steps = pair[by_rank], delta[by_rank]
    k = 0
    while k + 1 < len(bounds) and bounds[k + 1] - bounds[k] >= _TAIL:
        idx = slots[bounds[k] : bounds[k + 1]]
        weight[idx] = np.clip(weight[idx] + steps[bounds[k] : bounds[k + 1]], -1.0, 1.0)
        k += 1
    if k + 1 < len(bounds):
        _tail(weight, pair[rank >= k], delta[rank >= k])


def _stable_order(keys: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
    """The stable sorting order of ``keys`` (>= 0). Keys below 2**32 sort as 16-bit
    halves, which numpy sorts by radix, several times faster than a merge sort: by the
    low half, then stably by the high half."""
    top = int(keys.max()) if len(keys) else 0
    if top < 2**16:
        return np.argsort(keys.astype(np.uint16), kind="stable")
    if top < 2**32:
        order = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
        high = (keys[order] >> 16).astype(np.uint16)
        return order[np.argsort(high, kind="stable")]
    return np.argsort(keys, kind="stable")


def _tail(
    weight: npt.NDArray[np.float64], pair: npt.NDArray[np.int64], delta: npt.NDArray[np.float64]
) -> None:
    """The last deltas of the few slots still moving, one by one (grouped by slot, in
    order within each)."""
    ws = weight.tolist()
    for i, d in zip(pair.tolist(), delta.tolist(), strict=True):
        w = ws[i] + d
        ws[i] = -1.0 if w < -1.0 else 1.0 if w > 1.0 else w
    for i in np.unique(pair).tolist():
        weight[i] = ws[i]
