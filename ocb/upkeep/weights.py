"""Maintenance decisions over edge weights (decay, prune, scale), and the types every
maintenance decision shares.

Each ``decide_<op>(view) -> OpPlan`` reads a ``View`` (the graph, vectors and traces
as they are before the operation, the clock's reading and the settings) and returns
the changes to record after the operation's ``MaintenanceRan``, each naming that
record's seq (``view.seq + 1``) as its cause. Nothing here mutates the view, reads a
clock or iterates a set without sorting: the same view gives the same plan.

Rules (constitutional authority is the one that never moves):

* decay: every edge's weight is multiplied by ``0.5 ** (elapsed_days /
  half_life_days)``, where the elapsed time runs from the last decay run (the ts of
  its ``MaintenanceRan``; for the first run, the ts of the brain's first record) to
  the view's ``now_ns``. An edge touching a constitutional node is exempt; one
  touching a canonical node decays at half the rate (the square root of the factor).
  Decay only moves weights toward 0, inhibitory ones too, and never removes an edge,
  so dormant edges can still recover. STOP weights decay by the same factor (a STOP
  that outcomes raised must not outlast the routes it competes with); reward
  baselines are statistics, not weights, and do not decay. When the factor would take
  off less than ``MIN_DECAY`` (a thousandth: within about an hour of the last run at
  the default 30-day half-life) nothing is recorded, not even the run, and the time
  carries over to the next run: a decay of no visible size is not worth an update of
  every edge.
* prune: edges with ``|w| < prune_below`` are removed, except edges touching a
  constitutional node and edges touching an injected node (CORRECTION, TEACHING,
  DIRECTIVE): those are deliberate, a correction's veto is kept however weak, and an
  injected node must never be left without edges. The default threshold (0.02) is far
  below the dormant tier (0.2): dormant edges are kept until they are truly dead.
* scale: when a node's positive outgoing weights sum above ``budget``, they are scaled
  down in proportion so they sum to ``budget``. Constitutional nodes and edges into
  them are neither counted nor scaled.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import msgspec

from ocb.engine.embed import Embedder, Matrix
from ocb.engine.learning import group_by_source
from ocb.settings import Indexing, Maintenance
from ocb_events.schema import STOP, EdgeDelta, EdgeRef, EdgesRemoved, EdgesUpdated, Event, Setting
from projections.graph import CHUNK, Edge, State as GraphState

NS_PER_DAY = 86_400 * 10**9
MIN_DECAY = 1e-3
"""Decay runs only when it takes at least this share off (1 - factor)."""
CONSTITUTIONAL, CANONICAL = "constitutional", "canonical"


class Change(msgspec.Struct, frozen=True):
    """One change an operation decided: ``kind`` is ``weight`` (before -> after),
    ``removed``, ``created``, ``merged`` (target absorbed into source) or ``split``."""

    kind: str
    source: str
    target: str = ""
    before: float = 0.0
    after: float = 0.0
    note: str = ""


class OpPlan(msgspec.Struct):
    """What one operation decided: the events that follow its MaintenanceRan (none:
    nothing to do), the blobs they name, its parameters and a summary, counts, and the
    changes, most significant first."""

    op: str
    params: tuple[Setting, ...]
    summary: str
    events: list[Event] = msgspec.field(default_factory=list)
    blobs: list[bytes] = msgspec.field(default_factory=list)
    counts: dict[str, int] = msgspec.field(default_factory=dict)
    changes: list[Change] = msgspec.field(default_factory=list)


@dataclass
class View:
    """What a maintenance decision reads: the graph before the operation, the seq of
    the log's last record (the operation's MaintenanceRan will be ``seq + 1``), the
    decision's time, the ts of the brain's first record, the settings, the embedder,
    node vectors, and the fired nodes of the most recent traces (oldest first)."""

    graph: GraphState
    seq: int
    now_ns: int
    first_ts: int
    settings: Maintenance
    indexing: Indexing
    embedder: Embedder
    vectors: Callable[[list[str]], Matrix]
    fired: list[tuple[str, ...]]

    @property
    def cause(self) -> int:
        """The seq the operation's MaintenanceRan gets."""
        return self.seq + 1


def setting(key: str, value: float | int | str) -> Setting:
    """One recorded parameter."""
    return Setting(key=key, value=value)


def authority(g: GraphState, node_id: str) -> str:
    """The authority of a node (overlay when it is unknown)."""
    node = g.nodes.get(node_id)
    return node.authority if node is not None else "overlay"


def edges(g: GraphState) -> Iterator[tuple[str, str, Edge]]:
    """Every edge as (source, target, edge), sorted by source then target."""
    for src in sorted(g.out):
        targets = g.out[src]
        for dst in sorted(targets):
            yield src, dst, targets[dst]


def _by_size(changes: list[Change]) -> list[Change]:
    return sorted(changes, key=lambda c: (-abs(c.after - c.before), c.source, c.target))


# --------------------------------------------------------------------------- decay


def decay_factor(elapsed_ns: int, half_life_days: float) -> float:
    """``0.5 ** (elapsed_days / half_life_days)``; 1 for no (or negative) elapsed time."""
    if elapsed_ns <= 0:
        return 1.0
    return float(0.5 ** (elapsed_ns / NS_PER_DAY / half_life_days))


def decide_decay(v: View) -> OpPlan:
    """Weaken every edge by the time since the last decay (see the module rules)."""
    s, g = v.settings, v.graph
    since = g.maintained.get("decay", v.first_ts)
    elapsed = max(0, v.now_ns - since)
    factor = decay_factor(elapsed, s.half_life_days)
    slow = math.sqrt(factor)
    days = elapsed / NS_PER_DAY
    params = (
        setting("half_life_days", s.half_life_days),
        setting("since_ns", since),
        setting("now_ns", v.now_ns),
        setting("elapsed_days", days),
        setting("factor", factor),
        setting("canonical_factor", slow),
    )
    if 1.0 - factor < MIN_DECAY:
        return OpPlan(
            "decay",
            params,
            f"nothing to decay: {days:.4f} day(s) since the last decay would take off "
            f"{1 - factor:.3%} (under {MIN_DECAY:.1%}); the time carries over",
        )
    deltas: list[EdgeDelta] = []
    changes: list[Change] = []
    exempt = 0
    for src, dst, e in edges(g):
        pair = (authority(g, src), authority(g, dst))
        if CONSTITUTIONAL in pair:
            exempt += 1
            continue
        f = slow if CANONICAL in pair else factor
        delta = e.weight * f - e.weight
        if delta != 0.0:
            deltas.append(EdgeDelta(source=src, target=dst, delta=delta))
            changes.append(Change("weight", src, dst, e.weight, e.weight + delta))
    deltas += _decay_stops(g, factor, slow)
    summary = (
        f"{len(deltas)} edge(s) decayed x{factor:.4f} over {days:.2f} day(s) "
        f"(canonical x{slow:.4f}); {exempt} constitutional edge(s) untouched"
    )
    plan = OpPlan("decay", params, summary, counts={"decayed": len(deltas), "exempt": exempt})
    if deltas:
        plan.events.append(
            EdgesUpdated(updates=group_by_source(deltas), rule="decay", cause_seq=v.cause)
        )
    plan.changes = _by_size(changes)
    return plan


def _decay_stops(g: GraphState, factor: float, slow: float) -> list[EdgeDelta]:
    """STOP weights are learned like edges and fade like them: otherwise a STOP that
    outcomes raised would outlast the decaying routes it competes with and end every
    walk at its seeds."""
    out = []
    for node_id in sorted(g.stop):
        w, auth = g.stop[node_id], authority(g, node_id)
        if w == 0.0 or auth == CONSTITUTIONAL:
            continue
        delta = w * (slow if auth == CANONICAL else factor) - w
        if delta != 0.0:
            out.append(EdgeDelta(source=node_id, target=STOP, delta=delta))
    return out


# --------------------------------------------------------------------------- prune


def decide_prune(v: View) -> OpPlan:
    """Remove truly dead edges (see the module rules)."""
    s, g = v.settings, v.graph
    removed: list[EdgeRef] = []
    changes: list[Change] = []
    kept = 0
    for src, dst, e in edges(g):
        if abs(e.weight) >= s.prune_below:
            continue
        injected = g.nodes[src].kind != CHUNK or g.nodes[dst].kind != CHUNK
        if injected or CONSTITUTIONAL in (authority(g, src), authority(g, dst)):
            kept += 1
            continue
        removed.append(EdgeRef(source=src, target=dst))
        changes.append(Change("removed", src, dst, e.weight, 0.0))
    summary = (
        f"{len(removed)} edge(s) with |weight| < {s.prune_below:g} removed; "
        f"{kept} protected (constitutional or injected)"
    )
    plan = OpPlan(
        "prune",
        (setting("prune_below", s.prune_below),),
        summary,
        counts={"removed": len(removed), "protected": kept},
    )
    if removed:
        plan.events.append(EdgesRemoved(edges=tuple(removed), cause_seq=v.cause))
    plan.changes = sorted(changes, key=lambda c: (abs(c.before), c.source, c.target))
    return plan


# --------------------------------------------------------------------------- scale


def decide_scale(v: View) -> OpPlan:
    """Scale each node's positive outgoing weights down to the budget."""
    s, g = v.settings, v.graph
    deltas: list[EdgeDelta] = []
    changes: list[Change] = []
    nodes = 0
    for src in sorted(g.out):
        if authority(g, src) == CONSTITUTIONAL:
            continue
        out = g.out[src]
        pos = [
            (dst, out[dst].weight)
            for dst in sorted(out)
            if out[dst].weight > 0 and authority(g, dst) != CONSTITUTIONAL
        ]
        total = sum(w for _, w in pos)
        if total <= s.budget * (1 + 1e-9):
            continue
        nodes += 1
        k = s.budget / total
        for dst, w in pos:
            deltas.append(EdgeDelta(source=src, target=dst, delta=w * k - w))
            changes.append(Change("weight", src, dst, w, w + (w * k - w), f"x{k:.4f}"))
    summary = f"{nodes} node(s) over the budget {s.budget:g}: {len(deltas)} edge(s) scaled down"
    plan = OpPlan(
        "scale",
        (setting("budget", s.budget),),
        summary,
        counts={"nodes": nodes, "scaled": len(deltas)},
    )
    if deltas:
        plan.events.append(
            EdgesUpdated(updates=group_by_source(deltas), rule="scale", cause_seq=v.cause)
        )
    plan.changes = _by_size(changes)
    return plan
