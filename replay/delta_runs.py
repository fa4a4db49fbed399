"""The rows of weight updates (table ``deltas``) for a run of ``edges_updated`` records
with no other graph record between them, computed as arrays.

Within such a run the graph's edges and nodes do not change, only weights do: each
change's ``before`` is its edge's weight after the run's earlier changes of that edge
(the weight the graph holds at that seq), ``after`` is ``before + delta`` clipped to
[-1, 1], the same float operations, in the same order, as the graph's fold
(``projections.fold_weights``, which then folds the run into the graph). A change
of an edge the graph does not hold (or a stop weight of a node it does not hold) gets
no row, as a record folded on its own gives none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from ocb_events.codec import EdgesPackedRaw, EdgesUpdatedRaw
from ocb_events.schema import STOP, EdgesUpdated
from projections import fold_weights, graph
from replay.trace_rows import Names, UpdatesRaw
from replay.weights import WeightRuns

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
_TAIL = 8
"""Below this many edges still moving, the last changes go one by one."""


def _stepped(start: F64, pair: I64, delta: F64) -> F64:
    """Each change's weight before it: ``start`` of its slot taken through the slot's
    earlier changes, clipped after each (rank by rank, the last few one by one)."""
    before = np.empty(len(pair))
    if not len(pair):
        return before
    weight = start.copy()
    order = np.argsort(pair, kind="stable")
    counts = np.bincount(pair)
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rank = np.empty(len(pair), dtype=np.int64)
    rank[order] = np.arange(len(pair)) - first[pair[order]]
    by_rank = np.argsort(rank, kind="stable")  # changes rank by rank, in log order
    bounds = np.concatenate(([0], np.cumsum(np.bincount(rank))))
    k = 0
    while k + 1 < len(bounds) and bounds[k + 1] - bounds[k] >= _TAIL:
        at = by_rank[bounds[k] : bounds[k + 1]]
        slots = pair[at]
        before[at] = weight[slots]
        weight[slots] = np.clip(weight[slots] + delta[at], -1.0, 1.0)
        k += 1
    rest = by_rank[bounds[k] :]
    if len(rest):
        rest = np.sort(rest)  # log order
        ws = weight.tolist()
        out = []
        for i, d in zip(pair[rest].tolist(), delta[rest].tolist(), strict=True):
            w = ws[i]
            out.append(w)
            w += d
            ws[i] = -1.0 if w < -1.0 else 1.0 if w > 1.0 else w
        before[rest] = out
    return before


class DeltaRun:
    """Weight updates gathered in log order (``add``) and settled at once (``settle``)
    into their rows and the graph. The pairs' indices carry over from run to run."""

    def __init__(self, names: Names) -> None:
        self.runs = WeightRuns()
        self.heads: list[tuple[int, int, str, int, str]] = []
        self.names = names
        self._sources: Any = np.empty(0, dtype=np.int32)
        self._targets: Any = np.empty(0, dtype=np.int32)

    def __len__(self) -> int:
        return len(self.heads)

    def _codes(self, pairs: Sequence[tuple[str, str]]) -> tuple[Any, Any]:
        """The source and target of every pair, as codes of ``names`` (grown as pairs
        are)."""
        had = len(self._sources)
        if had != len(pairs):
            new = pairs[had:]
            self._sources = np.concatenate((self._sources, self.names.coded([s for s, _ in new])))
            self._targets = np.concatenate((self._targets, self.names.coded([t for _, t in new])))
        return self._sources, self._targets

    def add(self, seq: int, ts: int, ev: EdgesUpdated | UpdatesRaw | EdgesPackedRaw) -> None:
        if isinstance(ev, EdgesUpdated | EdgesPackedRaw):
            self.runs.gather(seq, ev)
        else:  # the same fields, its updates parsed with the run's
            self.runs.add_raw(seq, cast(EdgesUpdatedRaw, ev))
        self.heads.append((seq, ts, ev.rule, ev.cause_seq, "edges_updated"))

    def settle(self, g: graph.State) -> tuple[list[Any], dict[str, Any], set[str], set[str]]:
        """Fold the run into ``g``; return the group heads with their row counts, the
        rows as columns (source, target, before, after, delta; source and target as
        codes of ``names``), the nodes whose stop
        weight or baseline it changed, and the sources whose edges it changed."""
        heads, self.heads = self.heads, []
        run = self.runs.take()
        pairs = run.pairs
        touched = np.unique(run.pair).tolist()
        size = (touched[-1] + 1) if touched else 0
        start, valid = np.zeros(size), np.zeros(size, dtype=bool)
        nodes, out = g.nodes.raw_items(), g.out
        stops, sources = set(run.baselines), set()
        for i in touched:
            src, dst = pairs[i]
            if dst == STOP:
                if src in nodes:
                    valid[i], start[i] = True, g.stop.get(src, 0.0)
                    stops.add(src)
                continue
            edge = (out.get(src) or {}).get(dst)
            if edge is not None:
                valid[i], start[i] = True, edge.weight
                sources.add(src)
        keep = valid[run.pair] if size else np.zeros(0, dtype=bool)
        pair, delta = run.pair[keep], run.delta[keep]
        before = _stepped(start, pair, delta)
        after = np.clip(before + delta, -1.0, 1.0)
        seqs = np.asarray([h[0] for h in heads], dtype=np.int64)
        per = np.bincount(np.searchsorted(seqs, run.seq[keep]), minlength=len(heads))
        fold_weights(g, run)
        g.seq = heads[-1][0]  # as the fold of its last record leaves it
        sources_of, targets_of = self._codes(pairs)
        cols = {"source": sources_of[pair], "target": targets_of[pair], "before": before}
        cols |= {"after": after, "delta": delta}
        return list(zip(heads, per.tolist(), strict=True)), cols, stops, sources
