"""Maintenance as events, outside the request path: ``maintain`` runs decay, prune,
merge, split, connect and scale on a brain; ``anchor`` sets authority.

Every operation decides its changes from the brain as it is after the operations
before it, then records one atomic batch: a ``MaintenanceRan`` (the operation, its
parameters and a summary) followed by its changes, each naming that record's seq as
its cause. An operation with nothing to change records nothing, so running maintenance
twice in a row changes nothing the second time (decay aside: time has passed).

Operations run in one fixed order, whatever order they are asked in: ``merge`` and
``split`` first (structure), then ``decay`` (time), then ``connect`` (its new edges do
not decay on the day they are made), then ``scale`` and finally ``prune`` (which removes
what the others left dead).

A dry run decides the same operations on a private copy of the graph, folding each
operation's planned events into the copy so that later operations see them, and
records nothing: the log stays byte for byte as it was.

The decision's time comes from ``clock`` (the wall clock by default): pass the clock
the brain records with, so that the next decay measures from the ts of this one.

Example:
    >>> with Brain("/tmp/brain") as b:                                  # doctest: +SKIP
    ...     report = maintain(b, ["decay", "prune"], dry_run=True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from hashlib import sha256
from pathlib import Path

import msgspec

from ocb.engine.embed import Matrix, unpack_matrix
from ocb.settings import Actor, Indexing, Maintenance, actor_of, resolve
from ocb.store import Decision, Store
from ocb.upkeep.structure import decide_connect, decide_merge, decide_split
from ocb.upkeep.weights import Change, OpPlan, View, decide_decay, decide_prune, decide_scale
from ocb_events.clock import Clock, system_clock
from ocb_events.errors import InputError, unknown
from ocb_events.schema import (
    AuthoritySet,
    Event,
    MaintenanceRan,
    NodesEmbedded,
    QueryTraced,
    Record,
)
from projections import graph as graph_projection

OPS = ("merge", "split", "decay", "connect", "scale", "prune")
"""Every operation, in the order they run."""
AUTHORITIES = ("constitutional", "canonical", "overlay")
ACTOR = "maintenance"

_DECIDE: dict[str, Callable[[View], OpPlan]] = {
    "merge": decide_merge,
    "split": decide_split,
    "decay": decide_decay,
    "connect": decide_connect,
    "scale": decide_scale,
    "prune": decide_prune,
}


class OpReport(msgspec.Struct):
    """What one operation did (or in a dry run, would do): the seq of its
    MaintenanceRan (0 when nothing was recorded), how many events it records, its
    summary, parameters and counts, and its most significant changes."""

    op: str
    seq: int
    events: int
    summary: str
    params: dict[str, float | int | bool | str]
    counts: dict[str, int]
    changes: list[Change]


class MaintenanceReport(msgspec.Struct):
    """A maintenance run: whether it was a dry run, its time, and each operation."""

    dry_run: bool
    now_ns: int
    ops: list[OpReport]

    @property
    def events(self) -> int:
        """Events recorded (in a dry run: that would be recorded)."""
        return sum(o.events for o in self.ops)


class AnchorReport(msgspec.Struct):
    """An authority set: the nodes whose authority changed, the file whose chunks
    (present and future) take it, and the seq recorded (0: nothing needed changing)."""

    authority: str
    node_ids: list[str]
    path: str
    seq: int


def parse_ops(ops: Sequence[str] | str) -> list[str]:
    """The named operations in the order they run (all of them when none is named).

    Raises:
        InputError: an unknown operation.
    """
    names = ops.split(",") if isinstance(ops, str) else [p for o in ops for p in o.split(",")]
    wanted = [n.strip().lower() for n in names if n.strip()]
    for name in wanted:
        if name not in OPS:
            raise InputError(
                f"unknown maintenance op {name!r}", f"use one or more of: {', '.join(OPS)}"
            )
    return [op for op in OPS if op in wanted] if wanted else list(OPS)


def recent_fired(store: Store, window: int) -> list[tuple[str, ...]]:
    """The fired nodes of the brain's last ``window`` traces, oldest first."""
    seqs = sorted(ref.seq for ref in store.state("traces").by_id.values())[-window:]
    if not seqs:
        return []
    wanted = set(seqs)
    return [
        rec.event.fired
        for rec in store.log.read(seqs[0], seqs[-1])
        if rec.seq in wanted and isinstance(rec.event, QueryTraced)
    ]


class _Scratch:
    """Where a dry run folds its plans: a copy of the graph and the planned vectors."""

    def __init__(self, store: Store, now_ns: int) -> None:
        self.graph = graph_projection.restore(graph_projection.snapshot(store.graph))
        self.store = store
        self.now_ns = now_ns
        self.rows: dict[str, Matrix] = {}

    def vectors(self, ids: list[str]) -> Matrix:
        out = self.store.vectors_of(ids)
        for i, nid in enumerate(ids):
            row = self.rows.get(nid)
            if row is not None:
                out[i] = row
        return out

    def fold(self, events: list[Event], blobs: list[bytes], first_seq: int) -> None:
        data = {sha256(b).hexdigest(): b for b in blobs}
        for i, ev in enumerate(events):
            rec = Record(seq=first_seq + i, ts=self.now_ns, actor=ACTOR, event=ev)  # type: ignore[arg-type]
            self.graph = graph_projection.evolve(self.graph, rec)
            if isinstance(ev, NodesEmbedded) and ev.blob in data:
                m = unpack_matrix(data[ev.blob])
                for r, nid in enumerate(ev.node_ids):
                    self.rows[nid] = m[r]


def _view(store: Store, now_ns: int, s: Maintenance, fired: list[tuple[str, ...]]) -> View:
    first = next(iter(store.log.read(1, 1)), None)
    return View(
        graph=store.graph,
        seq=store.log.last_seq,
        now_ns=now_ns,
        first_ts=first.ts if first is not None else now_ns,
        settings=s,
        indexing=resolve(Indexing, store.state("config").values),
        embedder=store.embedder(),
        vectors=store.vectors_of,
        fired=fired,
    )


def _report(plan: OpPlan, seq: int, events: int, top: int) -> OpReport:
    return OpReport(
        op=plan.op,
        seq=seq,
        events=events,
        summary=plan.summary,
        params={p.key: p.value for p in plan.params},
        counts=plan.counts,
        changes=plan.changes[:top],
    )


def maintain(
    store: Store,
    ops: Sequence[str] | str = OPS,
    *,
    dry_run: bool = False,
    clock: Clock = system_clock,
    top: int = 10,
    actor: str = "cli",
    **overrides: float | int | None,
) -> MaintenanceReport:
    """Run maintenance operations on a brain, each recorded as one atomic batch (as
    ``actor``).

    Args:
        store: an open brain (a writer, unless ``dry_run``).
        ops: operation names (or one comma-separated string); all when empty.
        dry_run: decide and report, record nothing.
        clock: the decision's time (read once).
        top: how many changes each operation reports.
        overrides: maintenance settings for this run (``half_life_days=14`` ...).

    Raises:
        InputError: an unknown operation or a setting out of range (nothing recorded).
    """
    order = parse_ops(ops)
    who = actor_of(actor)
    store.load("config", "graph", "traces", "vectors")
    s = resolve(Maintenance, store.state("config").values, **overrides)
    now = clock()
    fired = recent_fired(store, s.merge_window) if "merge" in order else []
    view = _view(store, now, s, fired)
    scratch = _Scratch(store, now) if dry_run else None
    if scratch is not None:
        view.graph, view.vectors = scratch.graph, scratch.vectors
    reports: list[OpReport] = []
    for op in order:
        if scratch is None:
            reports.append(_record_op(store, op, view, who, top))
            continue
        plan = _DECIDE[op](view)
        events = _events(op, plan)
        if events:
            scratch.fold(events, plan.blobs, view.cause)
            view.graph = scratch.graph
        reports.append(_report(plan, 0, len(events), top))
        view.seq += len(events)
    return MaintenanceReport(dry_run=dry_run, now_ns=now, ops=reports)


def _events(op: str, plan: OpPlan) -> list[Event]:
    """The records of an operation: its ``maintenance_ran``, then its changes (none
    when it changes nothing)."""
    if not plan.events:
        return []
    return [MaintenanceRan(op=op, params=plan.params, summary=plan.summary), *plan.events]


def _record_op(store: Store, op: str, view: View, actor: Actor, top: int) -> OpReport:
    """Decide an operation on ``view`` and record it; when another writer appended
    meanwhile, decided again on the brain as it is then."""
    plans: list[OpPlan] = []

    def decide(seq: int) -> Decision:
        if seq != view.seq:  # the log moved on: the graph and settings as they are now
            view.graph, view.seq = store.graph, seq
            view.indexing = resolve(Indexing, store.state("config").values)
        plans.append(_DECIDE[op](view))
        return Decision(_events(op, plans[-1]), plans[-1].blobs)

    recs = store.transact(actor, decide)
    view.graph, view.seq = store.graph, store.log.last_seq
    return _report(plans[-1], recs[0].seq if recs else 0, len(recs), top)


# --------------------------------------------------------------------------- anchor


def _relative(store: Store, path: str) -> str:
    root = store.workspace
    p = path.replace("\\", "/").removeprefix("./")
    if root and Path(p).is_absolute() and Path(p).is_relative_to(root):
        return Path(p).relative_to(root).as_posix()
    return p


def anchor(
    store: Store, authority: str, *, node_ids: Sequence[str] = (), path: str = ""
) -> AnchorReport:
    """Set the authority of nodes, or of every chunk of a file (present and future).

    Raises:
        InputError: an unknown authority, node id or file; nothing named.
    """
    if authority not in AUTHORITIES:
        raise InputError(
            f"unknown authority {authority!r}", f"use one of: {', '.join(AUTHORITIES)}"
        )
    if not node_ids and not path:
        raise InputError(
            "nothing to anchor",
            "pass `node_ids=ID` (repeatable) or `path=PATH`",
            param=("node_ids", "path"),
        )
    decided: list[tuple[list[str], str]] = []

    def decide(_seq: int) -> list[AuthoritySet]:
        g = store.graph  # what ``changed`` is read from
        for nid in node_ids:
            if nid not in g.nodes:
                raise unknown("node", nid, sorted(g.nodes), "list node ids with ocb query --json")
        rel = _relative(store, path) if path else ""
        if rel and rel not in g.files:
            raise unknown("file", rel, sorted(g.files), "give a path relative to the workspace")
        ids = sorted(set(node_ids) | set(g.files[rel].chunks if rel else ()))
        changed = [i for i in ids if g.nodes[i].authority != authority]
        decided.append((changed, rel))
        if not changed and not (rel and g.file_authority.get(rel, "overlay") != authority):
            return []
        return [
            AuthoritySet(
                authority=authority,  # type: ignore[arg-type]
                node_ids=tuple(sorted(set(node_ids))),
                path=rel,
            )
        ]

    recs = store.transact("human", decide)
    changed, rel = decided[-1]
    return AnchorReport(authority, changed, rel, recs[0].seq if recs else 0)
