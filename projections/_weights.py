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
_NEAR = 0.5
"""A slot whose weight starts this near a bound (or nearer) is likely to reach it."""
_TAIL = 8
"""Below this many edges still moving, the last deltas go one by one."""


class WeightRun:
    """A run of weight updates, as arrays in log order: ``pair`` (an index into
    ``pairs``, the (source, target) of each edge, STOP for a stop weight), ``delta`` and
    ``seq`` per change, and the last ``baselines`` recorded per node.

    ``memo``, when given, is where ``fold_weights`` keeps what it found in the graph
    for the next run it folds with the same ``memo`` (the runs of one ``WeightRuns``):
    the edges of the touched slots, reused while no other graph record has been
    folded in between (the fold of any sets the state's ``seq``, which ``fold_weights``
    leaves as it is)."""

    __slots__ = ("baselines", "delta", "memo", "pair", "pairs", "seq")

    def __init__(
        self,
        pairs: Sequence[tuple[str, str]],
        pair: npt.NDArray[np.int64],
        delta: npt.NDArray[np.float64],
        seq: npt.NDArray[np.int64],
        baselines: dict[str, float],
        memo: dict[str, Any] | None = None,
    ) -> None:
        self.pairs = pairs
        self.pair = pair
        self.delta = delta
        self.seq = seq
        self.baselines = baselines
        self.memo = memo


def fold_weights(state: State, run: WeightRun) -> None:
    """Apply ``run`` to ``state`` (in place), as folding its records one by one would."""
    nodes = state.nodes.raw_items()
    for node, value in run.baselines.items():
        if node in nodes:
            state.baseline[node] = value
    if not len(run.pair):
        return
    counts = np.bincount(run.pair, minlength=len(run.pairs))
    touched = np.flatnonzero(counts)
    size = int(touched[-1]) + 1
    edges, stops = _found(state, run, touched)
    start = np.zeros(size)
    valid = np.zeros(size, dtype=bool)
    for held in (edges, stops):
        start[held.slots], valid[held.slots] = held.begin, True
    pair, delta, seq = run.pair, run.delta, run.seq
    if len(edges.slots) + len(stops.slots) < len(touched):  # edges the graph does not hold
        keep = valid[pair]
        pair, delta, seq = pair[keep], delta[keep], seq[keep]
    weight = _clipped_sums(start, pair, delta, counts[:size] * valid)
    last = np.zeros(size, dtype=np.int64)
    np.maximum.at(last, pair, seq)
    ws, ss = weight[edges.slots].tolist(), last[edges.slots].tolist()
    for edge, w, s in zip(edges.found, ws, ss, strict=True):
        edge.weight = w
        edge.last_seq = s
    state.stop.update(zip(stops.found, weight[stops.slots].tolist(), strict=True))
    if run.memo is not None:
        run.memo["seq"] = state.seq


def _found(state: State, run: WeightRun, touched: npt.NDArray[np.intp]) -> tuple[_Held, _Held]:
    """``_present``, or what it found for the run before when that still holds: the
    same state, no graph record folded since, the same slots touched (their weights
    read anew)."""
    memo = run.memo
    if memo is None:
        return _present(state, run.pairs, touched.tolist())
    if (
        memo.get("state") is state
        and memo.get("seq") == state.seq
        and np.array_equal(memo["touched"], touched)
    ):
        edges, stops = memo["edges"], memo["stops"]
        edges.begin = [edge.weight for edge in edges.found]
        stop_of = state.stop.get
        stops.begin = [stop_of(node, 0.0) for node in stops.found]
        return edges, stops
    edges, stops = _present(state, run.pairs, touched.tolist())
    memo.update(state=state, seq=None, touched=touched, edges=edges, stops=stops)
    return edges, stops


class _Held:
    """The touched slots the graph holds, of one kind (edges, or nodes' stop weights):
    each slot, its edge (its node's id), and its weight before the run."""

    __slots__ = ("begin", "found", "slots")

    def __init__(self) -> None:
        self.slots: list[int] = []
        self.found: list[Any] = []
        self.begin: list[float] = []


def _present(
    state: State, pairs: Sequence[tuple[str, str]], touched: list[int]
) -> tuple[_Held, _Held]:
    """The touched slots whose edge, or whose node for a stop weight, the graph holds:
    the edges and the stop weights apart. (A source's edges mostly have neighbouring
    slots: its targets are looked up once for each stretch of them.)"""
    nodes, stop_of = state.nodes.raw_items(), state.stop.get
    out, raw_out = state.out, state.out.raw_items()
    edges, stops = _Held(), _Held()
    source: str | None = None
    targets: Any = None
    for i in touched:
        src, dst = pairs[i]
        if dst == STOP:
            if src in nodes:
                stops.slots.append(i)
                stops.found.append(src)
                stops.begin.append(stop_of(src, 0.0))
            continue
        if src != source:
            source, targets = src, raw_out.get(src)
            if targets is not None and type(targets) is not dict:
                targets = out[src]  # still encoded: decode it
        edge = targets.get(dst) if targets is not None else None
        if edge is not None:
            edges.slots.append(i)
            edges.found.append(edge)
            edges.begin.append(edge.weight)
    return edges, stops


def _clipped_sums(
    start: npt.NDArray[np.float64],
    pair: npt.NDArray[np.int64],
    delta: npt.NDArray[np.float64],
    counts: npt.NDArray[np.int64],
) -> npt.NDArray[np.float64]:
    """Each slot's ``start`` taken through its deltas in order (``counts`` of them),
    clipped to [-1, 1] after each. Slots that cannot reach a bound are plain running
    sums (``numpy.add.at``); the others go rank by rank (``_stepped``). A slot's
    running sum stays within its start plus or minus the sum of its deltas'
    magnitudes, whatever their order: when that is inside the bounds, no step clips.
    (That sum only bounds the running sums, so its own order does not matter; a NaN
    in it holds the slot.)"""
    weight = start.copy()
    if int(counts[np.abs(start) >= _NEAR].sum()) * 8 >= len(pair) * 7:
        _stepped(weight, pair, delta, counts)  # mostly slots near a bound: no pass to tell
        return weight
    reach = np.abs(start) + np.bincount(pair, weights=np.abs(delta), minlength=len(start))
    free_slot = reach < 1.0 - _MARGIN
    n_free = int(counts[free_slot].sum())
    if n_free == len(pair):
        np.add.at(weight, pair, delta)
    elif n_free * 8 < len(pair):  # (stepping a free slot gives its plain sum too)
        _stepped(weight, pair, delta, counts)
    else:
        free = free_slot[pair]
        np.add.at(weight, pair[free], delta[free])
        held = ~free
        _stepped(weight, pair[held], delta[held], np.where(free_slot, 0, counts))
    return weight


def _stepped(
    weight: npt.NDArray[np.float64],
    pair: npt.NDArray[np.int64],
    delta: npt.NDArray[np.float64],
    counts: npt.NDArray[np.int64],
) -> None:
    """The clipped sums, one step per rank over every slot at once: step k adds each
    slot's k-th delta (a slot has at most one), then clips. The slots are placed by
    their number of deltas, most first, so the slots that still move at step k are a
    prefix of them. When fewer than ``_TAIL`` still move, each of those goes through
    its last deltas one by one. (``counts``: each slot's number of deltas.)"""
    slots = np.flatnonzero(counts)
    placed = slots[np.argsort(-counts[slots], kind="stable")]  # most deltas first
    many = counts[placed]
    place = np.zeros(len(counts), dtype=np.int64)
    place[placed] = np.arange(len(placed))
    by_slot = delta[_grouped(place, pair)]  # each slot's deltas in a row, in log order
    # moving[k]: how many slots have a k-th delta; they are the first moving[k] placed
    moving = (len(placed) - np.cumsum(np.bincount(many))[:-1]).tolist()
    at = np.cumsum(many) - many  # where each slot's k-th delta is, at step k
    w = weight[placed]
    k = 0
    while k < len(moving) and moving[k] >= _TAIL:
        n = moving[k]
        part = w[:n]
        np.add(part, by_slot[at[:n]], out=part)
        np.minimum(part, 1.0, out=part)
        np.maximum(part, -1.0, out=part)
        at[:n] += 1
        k += 1
    if k < len(moving):
        _tail(w, by_slot, at, at + (many - k))
    weight[placed] = w


def _grouped(key: npt.NDArray[np.int64], items: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The stable sorting order of ``key[items]`` (keys >= 0): the keys sorted with each
    one's index in their low bits, a sort of distinct numbers (faster than a stable
    argsort) when they fit in 63 bits."""
    if not len(items):
        return np.zeros(0, dtype=np.int64)
    bits = (len(items) - 1).bit_length()
    if int(key.max()) >= 1 << (63 - bits):
        return _stable_order(key[items]).astype(np.int64)
    return np.sort((key << bits)[items] | np.arange(len(items))) & ((1 << bits) - 1)


def _tail(
    w: npt.NDArray[np.float64],
    by_slot: npt.NDArray[np.float64],
    at: npt.NDArray[np.int64],
    end: npt.NDArray[np.int64],
) -> None:
    """The last deltas of the few slots still moving, ``by_slot[at[i] : end[i]]`` for
    the i-th, one by one."""
    for i in np.flatnonzero(end > at).tolist():
        x = float(w[i])
        for d in by_slot[at[i] : end[i]].tolist():
            x += d
            x = -1.0 if x < -1.0 else 1.0 if x > 1.0 else x
        w[i] = x


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
