"""The scratch brain of a what-if: a brain's history replayed into a temporary
directory under other learning settings (``scratch_replay``; ``ocb.whatif`` compares
the result with the real brain).

Replay never touches the real brain. It builds a scratch brain in a temporary
directory (removed afterwards) whose vectors are read from the real brain's blob store
(content-addressed, never written): records ``1..start`` are copied as they are, then
every later record is copied or re-decided, in order, with its original ts and actor:

* an ``outcome_recorded`` is re-decided: its trajectory (the trace it scores, as
  recorded; or for ``fired_ids`` the path rebuilt on the scratch graph with the
  traversal settings in force then) goes through ``decide_learn`` with the settings of
  its recorded decision (rule, eta, gamma, baseline rate, source weight: config changes
  and per-call options included; the config in force when nothing was recorded), then
  the what-if's overrides, and the scratch graph's reward baselines. The recorded
  ``edges_updated`` of that outcome is dropped;
* a ``maintenance_ran`` of ``decay`` or ``scale`` is re-decided from its recorded
  parameters (half-life and time, budget) on the scratch weights, since both multiply
  weights: copying their recorded deltas would not decay the what-if's weights;
* a ``retracted`` outcome or teacher label is re-decided: its reversal is decided
  again (``ocb.graph.retract.decide_retract``) from the update the scratch log holds for it
  (re-decided or copied) and the weights that update found, which the replay keeps for
  every record a later retraction names; the recorded reversal is dropped;
* everything else is copied as recorded: file events, injections and their
  retractions, query traces (what the agent saw and the outcomes score), config
  changes, teacher labels and their updates, prune, merge, split and connect
  decisions, route models. Seqs named by copied events (``cause_seq``,
  ``target_seq``) are mapped onto the scratch log.

Exactness: with no overrides every re-decision gets the same inputs as the recorded
one (the same trajectory, the same settings, the same baselines and weights, by
induction over the log, since every other record is copied with its ts), and the
decision functions are deterministic, so the scratch log equals the real one record for
record and the graphs are byte-identical.
"""

from __future__ import annotations

import bisect
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from ocb.engine.embed import HashEmbedder
from ocb.engine.learning import RULES
from ocb.graph.learn import RouteInputs, decide_learn, path_rule, steps_from_ids
from ocb.graph.query import trace_of
from ocb.graph.retract import Change, Held, Target, decide_retract
from ocb.settings import Indexing, Learning, Maintenance, Routes, Traversal, resolve
from ocb.store import Store
from ocb.upkeep.weights import OpPlan, View, decide_decay, decide_scale
from ocb_events.blobs import BlobStore
from ocb_events.errors import InputError
from ocb_events.protocol import EventLog
from ocb_events.schema import (
    EdgeRelevanceSet,
    EdgesRemoved,
    EdgesUpdated,
    Event,
    LearnParams,
    MaintenanceRan,
    NodesMerged,
    NodeSplit,
    OutcomeRecorded,
    QueryTraced,
    Record,
    Retracted,
    RouteModelTrained,
    RouteUpdated,
    Step,
    TeacherLabeled,
)

LEARNING_RULES = tuple(RULES)
"""The rules of outcome updates, re-decided by what-if replay."""
UPKEEP: dict[str, Callable[[View], OpPlan]] = {"decay": decide_decay, "scale": decide_scale}
"""The maintenance operations re-decided by what-if replay (the others are copied)."""
BATCH = 1000
Progress = Callable[[str, int, int], None]


class ReplayStats(msgspec.Struct):
    """What a what-if replay did: records copied as recorded, outcomes and
    maintenance runs re-decided, recorded decisions they replaced, the records of
    the scratch log (its last seq), and retractions re-decided."""

    copied: int = 0
    outcomes: int = 0
    maintenance: int = 0
    replaced: int = 0
    records: int = 0
    retractions: int = 0


class _Clock:
    """The scratch log's clock: the ts of the record being copied."""

    def __init__(self) -> None:
        self.now_ns = 0

    def __call__(self) -> int:
        return self.now_ns


class _ReadBlobs(BlobStore):
    """The real brain's blob store, for reading only."""

    def put(self, data: bytes) -> str:
        raise PermissionError("what-if replay never writes to the real brain's blobs")


class _SeqMap:
    """Real seq -> scratch seq, stored as the points where the offset changes."""

    def __init__(self) -> None:
        self._reals, self._offsets = [0], [0]

    def note(self, real: int, scratch: int) -> None:
        if scratch - real != self._offsets[-1]:
            self._reals.append(real)
            self._offsets.append(scratch - real)

    def __call__(self, real: int) -> int:
        return real + self._offsets[bisect.bisect_right(self._reals, real) - 1]

    @property
    def identity(self) -> bool:
        return self._offsets == [0]


def _remap(ev: Event, seqs: _SeqMap) -> Event:
    """A copied event with the seqs it names moved onto the scratch log."""
    if seqs.identity:
        return ev
    if isinstance(
        ev, EdgesUpdated | EdgesRemoved | EdgeRelevanceSet | NodesMerged | NodeSplit | RouteUpdated
    ):
        return msgspec.structs.replace(ev, cause_seq=seqs(ev.cause_seq))
    if isinstance(ev, RouteModelTrained):
        return msgspec.structs.replace(ev, trained_to_seq=seqs(ev.trained_to_seq))
    if isinstance(ev, Retracted):
        return msgspec.structs.replace(ev, target_seq=seqs(ev.target_seq))
    return ev


@dataclass
class _Window:
    """The recorded decisions after ``start``: the rule and settings of each outcome's
    update (by the outcome's seq), and the seqs of the updates that get replaced."""

    decisions: dict[int, tuple[str, LearnParams | None]] = field(default_factory=dict)
    replaced: set[int] = field(default_factory=set)
    targets: set[int] = field(default_factory=set)


def _window(log: EventLog, start: int, end: int) -> _Window:
    w = _Window()
    outcomes: set[int] = set()
    upkeep: set[int] = set()
    retractions: set[int] = set()
    for rec in log.read(start + 1, end, light=True):
        ev = rec.event
        if isinstance(ev, OutcomeRecorded):
            outcomes.add(rec.seq)
        elif isinstance(ev, MaintenanceRan) and ev.op in UPKEEP:
            upkeep.add(rec.seq)
        elif isinstance(ev, Retracted) and ev.kind != "injection":
            retractions.add(rec.seq)
            w.targets.add(ev.target_seq)
        elif isinstance(ev, Change) and ev.cause_seq in retractions:
            w.replaced.add(rec.seq)
        elif isinstance(ev, RouteUpdated) and ev.cause_seq in outcomes:
            w.decisions[ev.cause_seq] = ("route", None)
            w.replaced.add(rec.seq)
        elif isinstance(ev, EdgesUpdated):
            if ev.rule in LEARNING_RULES and ev.cause_seq in outcomes:
                w.decisions[ev.cause_seq] = (ev.rule, ev.params)
                w.replaced.add(rec.seq)
            elif ev.rule in UPKEEP and ev.cause_seq in upkeep:
                w.replaced.add(rec.seq)
    return w


class Replay:
    """A scratch brain being rebuilt from a real one (see the module docstring)."""

    def __init__(self, real: Store, scratch: Store, clock: _Clock, overrides: Mapping[str, object]):
        self.real, self.brain, self.clock = real, scratch, clock
        self.overrides = dict(overrides)
        self.stats = ReplayStats()
        self.queries: list[str] = []
        self._seqs = _SeqMap()
        self._pending: list[Event] = []
        self._base = 0
        self._key = (0, "")
        self._targets: set[int] = set()
        self._held: dict[int, Held] = {}

    # ---------------------------------------------------------------- writing

    @property
    def _next_seq(self) -> int:
        return self.brain.log.last_seq + len(self._pending) + 1

    def _add(self, rec: Record, events: list[Event]) -> None:
        key = (rec.ts, rec.actor)
        if self._pending and (key != self._key or len(self._pending) >= BATCH):
            self.flush()
        if not self._pending:
            self._base = self.brain.log.last_seq  # the seqs pending events are decided at
        self._key = key
        self._pending += events

    def flush(self) -> None:
        """Record the buffered events (one batch: they share a ts and an actor)."""
        if not self._pending:
            return
        self.clock.now_ns, actor = self._key
        self.brain.record(self._pending, actor, expected_seq=self._base)
        self._pending = []

    def copy(self, rec: Record) -> None:
        """Copy a record as recorded (the seqs it names mapped onto the scratch log),
        keeping what a later retraction of it needs."""
        ev = _remap(rec.event, self._seqs)
        if rec.seq in self._targets and isinstance(ev, OutcomeRecorded | TeacherLabeled):
            self._held[rec.seq] = Held(ev)
        elif isinstance(ev, Change):
            held = self._held.get(rec.event.cause_seq)  # type: ignore[union-attr]
            if held is not None and rec.event.cause_seq in self._targets:  # type: ignore[union-attr]
                self.flush()  # the weights this change finds
                held.keep(self.brain.graph, ev)
        self._seqs.note(rec.seq, self._next_seq)
        self._add(rec, [ev])
        self.stats.copied += 1

    # ---------------------------------------------------------------- deciding

    def _learning(self, source: str, recorded: tuple[str, LearnParams | None] | None) -> Learning:
        s = resolve(Learning, self.brain.state("config").values)
        if recorded is not None:
            rule, p = recorded
            s = msgspec.structs.replace(s, rule=rule)
            if p is not None:
                s = msgspec.structs.replace(
                    s, eta=p.eta, gamma=p.gamma, baseline_rate=p.baseline_rate
                )
                s = msgspec.structs.replace(s, **{f"weight_{source}": p.source_weight})
        return msgspec.structs.replace(s, **self.overrides)

    def _trajectory(
        self, ev: OutcomeRecorded
    ) -> tuple[list[Step], float, float, QueryTraced | None] | None:
        """The steps an outcome credits, with the damping and temperature that acted,
        and the trace it scores (None for an explicit path)."""
        trav = resolve(Traversal, self.brain.state("config").values)
        try:
            if ev.fired_ids:
                steps = steps_from_ids(self.brain.graph, list(ev.fired_ids), trav)
                return steps, trav.damping, trav.tau, None
            scored = trace_of(self.brain, ev.trace_id, ev.chat_id)
        except InputError:
            return None  # not resolvable on the scratch brain: keep what was recorded
        return list(scored.steps), scored.params.damping, scored.params.tau, scored

    def outcome(self, rec: Record, recorded: tuple[str, LearnParams | None] | None) -> bool:
        """Re-decide an outcome's update; False when it must be copied as recorded."""
        ev = rec.event
        assert isinstance(ev, OutcomeRecorded)
        self.flush()
        path = self._trajectory(ev)
        if path is None:
            return False
        steps, damping, tau, trace = path
        seq = self._next_seq
        if recorded is None and ev.rule:
            recorded = (ev.rule, None)  # an outcome that changed nothing names its rule
        settings = self._learning(ev.source, recorded)
        route = None
        if trace is None:
            settings = path_rule(settings)
        else:
            rs = resolve(Routes, self.brain.state("config").values)
            route = RouteInputs(self.brain.state("routes"), self.brain.graph, trace, rs)
        got = decide_learn(
            steps,
            ev.reward,
            settings,
            source=ev.source,
            damping=damping,
            tau=tau,
            outcome_seq=seq,
            baselines=self.brain.graph.baseline,
            trace_id=ev.trace_id,
            chat_id=ev.chat_id,
            fired_ids=ev.fired_ids,
            request_id=ev.request_id,
            used=ev.used,
            route=route,
        )
        if rec.seq in self._targets:
            held = self._held[rec.seq] = Held(ev)
            for change in got.events[1:]:
                held.keep(self.brain.graph, change)  # type: ignore[arg-type]
        self._seqs.note(rec.seq, seq)
        self._add(rec, [ev, *got.events[1:]])
        self.flush()
        self.stats.outcomes += 1
        return True

    def retraction(self, rec: Record) -> None:
        """Re-decide the reversal of a retracted outcome or label, from the update the
        scratch log holds for it and the weights that update found."""
        ev = rec.event
        assert isinstance(ev, Retracted)
        self.flush()
        held = self._held[ev.target_seq]
        seq = self._next_seq
        target = Target(self._seqs(ev.target_seq), ev.kind, held.event, tuple(held.changes))
        d = decide_retract(
            target, self.brain.graph, held.before, retraction_seq=seq, reason=ev.reason,
            routes=self.brain.state("routes"),
        )  # fmt: skip
        self._seqs.note(rec.seq, seq)
        self._add(rec, d.events)
        self.flush()
        self.stats.retractions += 1

    def upkeep(self, rec: Record) -> bool:
        """Re-decide a decay or scale run; False when its parameters are incomplete."""
        ev = rec.event
        assert isinstance(ev, MaintenanceRan)
        p = {s.key: s.value for s in ev.params}
        s = resolve(Maintenance, self.brain.state("config").values)
        now, first = rec.ts, rec.ts
        try:
            if ev.op == "decay":
                s = msgspec.structs.replace(s, half_life_days=float(p["half_life_days"]))
                now, first = int(p["now_ns"]), int(p["since_ns"])
            else:
                s = msgspec.structs.replace(s, budget=float(p["budget"]))
        except (KeyError, TypeError, ValueError):
            return False
        self.flush()
        view = View(
            graph=self.brain.graph,
            seq=self.brain.log.last_seq,
            now_ns=now,
            first_ts=first,
            settings=s,
            indexing=Indexing(),
            embedder=HashEmbedder(),  # neither decay nor scale reads vectors
            vectors=self.brain.vectors_of,
            fired=[],
        )
        plan = UPKEEP[ev.op](view)
        self.stats.maintenance += 1
        if ev.op == "decay" and not plan.events:
            # too little to decay under today's rule: like ``ocb maintain``, nothing is
            # recorded, not even the run, and the time carries over to the next one
            self._seqs.note(rec.seq, self._next_seq - 1)
            return True
        self._seqs.note(rec.seq, self._next_seq)
        self._add(rec, [ev, *plan.events])
        self.flush()
        return True

    def _record(self, rec: Record, w: _Window, limit: int) -> None:
        ev = rec.event
        if rec.seq in w.replaced:
            self._seqs.note(rec.seq, self._next_seq - 1)
            self.stats.replaced += 1
        elif isinstance(ev, OutcomeRecorded):
            if not self.outcome(rec, w.decisions.get(rec.seq)):
                self.copy(rec)
        elif isinstance(ev, MaintenanceRan) and ev.op in UPKEEP:
            if not self.upkeep(rec):
                self.copy(rec)
        elif isinstance(ev, Retracted) and ev.target_seq in self._held:
            self.retraction(rec)
        else:
            if isinstance(ev, QueryTraced) and len(self.queries) < limit:
                if ev.query not in self.queries:
                    self.queries.append(ev.query)
            self.copy(rec)

    def run(self, start: int, end: int, limit: int, progress: Progress | None = None) -> None:
        """Copy ``1..start``, then copy or re-decide ``start+1..end`` (see the module);
        remember the first ``limit`` distinct query texts after ``start``."""
        w = _window(self.real.log, start, end)
        self._targets = w.targets
        step = max(1, end // 100)
        for rec in self.real.log.read(1, end):
            if progress is not None and rec.seq % step == 0:
                progress("what-if", rec.seq, end)
            if rec.seq <= start:
                self.copy(rec)
            else:
                self._record(rec, w, limit)
        self.flush()
        self.stats.records = self.brain.log.last_seq
        if progress is not None:
            progress("what-if", end, end)


@contextmanager
def scratch_replay(
    store: Store,
    start: int,
    overrides: Mapping[str, object] | None = None,
    *,
    queries: int = 50,
    progress: Progress | None = None,
) -> Iterator[Replay]:
    """Replay ``store`` into a scratch brain from ``start`` (a seq, 0 for all) with
    learning ``overrides`` (validated ones, see ``ocb.whatif.check_overrides``); the scratch brain
    lives until the block exits, then its directory is removed.

    Raises:
        InputError: ``start`` beyond the brain's last seq.
    """
    end = store.horizon
    if not 0 <= start <= end:
        raise InputError(
            f"`start` {start} is outside the history", f"valid: 0 to {end}", param="start"
        )
    with tempfile.TemporaryDirectory(prefix="ocb-whatif-") as tmp:
        clock = _Clock()
        scratch = Store.create(
            Path(tmp) / "brain",
            clock=clock,
            durability="none",
            warn=store.warn,
            snapshot_every=1 << 62,
        )
        try:
            scratch.blobs = _ReadBlobs(store.blobs.directory)
            scratch.load("config", "graph", "traces", "vectors")
            replay = Replay(store, scratch, clock, overrides or {})
            with scratch.log.group():
                replay.run(start, end, queries, progress)
            yield replay
        finally:
            scratch.close()
