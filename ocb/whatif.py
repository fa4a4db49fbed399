"""Comparing a brain with its past and with an alternative past: ``diff`` between two
points of its history, and ``what_if`` replay under other learning settings.

What-if replay never touches the real brain. It builds a scratch brain in a temporary
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

Example:
    >>> report = what_if(brain, 0, rule="heuristic", eta=0.05)       # doctest: +SKIP
    >>> report.weights.edges_changed, report.queries.what_if_mean_fired  # doctest: +SKIP
"""

from __future__ import annotations

import bisect
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from ocb.brain import Brain
from ocb.engine.embed import HashEmbedder
from ocb.engine.policy import tiers
from ocb.graph.learn import decide_learn, steps_from_ids
from ocb.graph.retract import Held, Target, decide_retract
from ocb.settings import Indexing, Learning, Maintenance, Traversal, check_key, resolve
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
    Step,
    TeacherLabeled,
)
from projections import graph as graph_projection
from replay import iso, resolve_point
from replay.diff import GraphDiff, Tiers, diff_graphs

LEARNING_RULES = ("pg", "heuristic")
"""The rules of outcome updates, re-decided by what-if replay."""
UPKEEP: dict[str, Callable[[View], OpPlan]] = {"decay": decide_decay, "scale": decide_scale}
"""The maintenance operations re-decided by what-if replay (the others are copied)."""
OVERRIDES = ("rule", "eta", "gamma", "baseline_rate")
"""The learning settings a what-if usually overrides (any ``learning.*`` name works)."""
BATCH = 1000
Progress = Callable[[str, int, int], None]


# --------------------------------------------------------------------------- points


def point(log: EventLog, spec: str | int, flag: str) -> int:
    """The seq a ``--from``/``--to`` value names: 0 (before the first record), a seq
    or an ISO time (resolved with ``replay.resolve_point``).

    Raises:
        InputError: a malformed value or a point outside the history (with the range).
    """
    if str(spec).strip() == "0":
        return 0
    try:
        return resolve_point(log, spec)
    except InputError as exc:
        message = exc.message.replace("--as-of", flag, 1)
        raise InputError(message, exc.hint + " (0: before the first record)") from None


def _check_report(threshold: float, top: int) -> None:
    if not threshold >= 0:
        raise InputError(
            f"--threshold must be at least 0, got {threshold}", "pass --threshold 0.05"
        )
    if top < 1:
        raise InputError(f"--top must be at least 1, got {top}", "pass --top 20")


# --------------------------------------------------------------------------- diff


class DiffReport(msgspec.Struct, frozen=True):
    """The graph at ``to_seq`` compared with the graph at ``from_seq`` (times as ISO
    UTC; ``""`` for seq 0), and how many records lie between."""

    from_seq: int
    to_seq: int
    from_time: str
    to_time: str
    records: int
    graph: GraphDiff


def _view_at(brain: Brain, seq: int) -> tuple[graph_projection.State, Tiers]:
    if seq == 0:
        return graph_projection.initial(), Tiers()
    with Brain(brain.path, writer=False, as_of=seq, warn=brain.warn) as view:
        return view.graph, tiers(view.settings()[0])


def diff(
    brain: Brain,
    start: str | int,
    end: str | int | None = None,
    *,
    threshold: float = 0.0,
    top: int = 20,
) -> DiffReport:
    """How the graph changed between two points of the brain's history.

    Args:
        brain: an open brain (read-only is enough).
        start: the earlier point: 0, a seq or an ISO time.
        end: the later point (default: the brain's last seq).
        threshold: weights that moved by at most this count as unchanged.
        top: how many node and edge changes to list.

    Raises:
        InputError: a point outside the history, ``start`` after ``end``, bad limits.
    """
    _check_report(threshold, top)
    a = point(brain.log, start, "--from")
    b = point(brain.log, end, "--to") if end is not None else brain.horizon
    if a > b:
        raise InputError(f"--from {a} is after --to {b}", "give the earlier point as --from")
    (ga, ta), (gb, tb) = _view_at(brain, a), _view_at(brain, b)
    graph = diff_graphs(ga, gb, tiers_before=ta, tiers_after=tb, threshold=threshold, top=top)
    times = [iso(brain.log.ts_of(s)) if s else "" for s in (a, b)]
    return DiffReport(a, b, times[0], times[1], b - a, graph)


# --------------------------------------------------------------------------- replay


def check_overrides(**overrides: object) -> dict[str, object]:
    """The given (non-None) ``learning.*`` overrides, validated and coerced.

    Raises:
        InputError: an unknown setting, rule, or a value out of range.
    """
    return {k: check_key(f"learning.{k}", v) for k, v in overrides.items() if v is not None}


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
    if isinstance(ev, EdgesUpdated | EdgesRemoved | EdgeRelevanceSet | NodesMerged | NodeSplit):
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
        elif isinstance(ev, EdgesUpdated | EdgeRelevanceSet) and ev.cause_seq in retractions:
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

    def __init__(self, real: Brain, scratch: Brain, clock: _Clock, overrides: Mapping[str, object]):
        self.real, self.brain, self.clock = real, scratch, clock
        self.overrides = dict(overrides)
        self.stats = ReplayStats()
        self.queries: list[str] = []
        self._seqs = _SeqMap()
        self._pending: list[Event] = []
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
        self._key = key
        self._pending += events

    def flush(self) -> None:
        """Record the buffered events (one batch: they share a ts and an actor)."""
        if not self._pending:
            return
        self.clock.now_ns, actor = self._key
        self.brain.record(self._pending, actor, expected_seq=self.brain.log.last_seq)
        self._pending = []

    def copy(self, rec: Record) -> None:
        """Copy a record as recorded (the seqs it names mapped onto the scratch log),
        keeping what a later retraction of it needs."""
        ev = _remap(rec.event, self._seqs)
        if rec.seq in self._targets and isinstance(ev, OutcomeRecorded | TeacherLabeled):
            self._held[rec.seq] = Held(ev)
        elif isinstance(ev, EdgesUpdated | EdgeRelevanceSet):
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

    def _trajectory(self, ev: OutcomeRecorded) -> tuple[list[Step], float, float] | None:
        """The steps an outcome credits, with the damping and temperature that acted."""
        trav = resolve(Traversal, self.brain.state("config").values)
        try:
            if ev.fired_ids:
                steps = steps_from_ids(self.brain.graph, list(ev.fired_ids), trav)
                return steps, trav.damping, trav.tau
            trace = self.brain.trace(ev.trace_id, ev.chat_id)
        except InputError:
            return None  # not resolvable on the scratch brain: keep what was recorded
        return list(trace.steps), trace.params.damping, trace.params.tau

    def outcome(self, rec: Record, recorded: tuple[str, LearnParams | None] | None) -> bool:
        """Re-decide an outcome's update; False when it must be copied as recorded."""
        ev = rec.event
        assert isinstance(ev, OutcomeRecorded)
        self.flush()
        path = self._trajectory(ev)
        if path is None:
            return False
        steps, damping, tau = path
        seq = self._next_seq
        events = decide_learn(
            steps,
            ev.reward,
            self._learning(ev.source, recorded),
            source=ev.source,
            damping=damping,
            tau=tau,
            outcome_seq=seq,
            baselines=self.brain.graph.baseline,
            trace_id=ev.trace_id,
            chat_id=ev.chat_id,
            fired_ids=ev.fired_ids,
        )
        if rec.seq in self._targets:
            held = self._held[rec.seq] = Held(ev)
            for change in events[1:]:
                held.keep(self.brain.graph, change)  # type: ignore[arg-type]
        self._seqs.note(rec.seq, seq)
        self._add(rec, [ev, *events[1:]])
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
            target, self.brain.graph, held.before, retraction_seq=seq, reason=ev.reason
        )
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
    brain: Brain,
    start: int,
    overrides: Mapping[str, object] | None = None,
    *,
    queries: int = 50,
    progress: Progress | None = None,
) -> Iterator[Replay]:
    """Replay ``brain`` into a scratch brain from ``start`` (a seq, 0 for all) with
    learning ``overrides`` (validated ones, see ``check_overrides``); the scratch brain
    lives until the block exits, then its directory is removed.

    Raises:
        InputError: ``start`` beyond the brain's last seq.
    """
    end = brain.horizon
    if not 0 <= start <= end:
        raise InputError(f"--from {start} is outside the history", f"valid: 0 to {end}")
    with tempfile.TemporaryDirectory(prefix="ocb-whatif-") as tmp:
        clock = _Clock()
        scratch = Brain.create(
            Path(tmp) / "brain",
            clock=clock,
            durability="none",
            warn=brain.warn,
            snapshot_every=1 << 62,
        )
        try:
            scratch.blobs = _ReadBlobs(brain.blobs.directory)
            scratch.load("config", "graph", "traces", "vectors")
            replay = Replay(brain, scratch, clock, overrides or {})
            with scratch.log.group():
                replay.run(start, end, queries, progress)
            yield replay
        finally:
            scratch.close()


# --------------------------------------------------------------------------- what-if


class QueryRun(msgspec.Struct, frozen=True):
    """One recorded query re-run on the real brain and on the what-if brain."""

    query: str
    real_fired: int
    what_if_fired: int
    real_context_chars: int
    what_if_context_chars: int


class QueryComparison(msgspec.Struct, frozen=True):
    """The recorded queries (distinct texts after ``--from``) re-run at the end on both
    brains without recording: means of fired nodes and context characters, how many
    fired a different set of nodes, and the ``top`` that differ most."""

    count: int
    real_mean_fired: float
    what_if_mean_fired: float
    real_mean_context_chars: float
    what_if_mean_context_chars: float
    changed: int
    top: list[QueryRun]


class WhatIfReport(msgspec.Struct, frozen=True):
    """A what-if replay from ``from_seq`` to ``to_seq`` with ``overrides``: what it
    re-decided, the what-if graph against the real one at the end (``before``: real,
    ``after``: what-if), and the recorded queries re-run on both."""

    from_seq: int
    to_seq: int
    overrides: dict[str, float | int | bool | str]
    replay: ReplayStats
    weights: GraphDiff
    queries: QueryComparison


def _mean(values: list[int]) -> float:
    return round(sum(values) / len(values), 3) if values else 0.0


def _alt(r: QueryRun) -> tuple[int, int]:
    return r.what_if_fired, r.what_if_context_chars


def compare_queries(real: Brain, alt: Brain, texts: list[str], top: int) -> QueryComparison:
    """Run each query on both brains (recording nothing) and compare what fired."""
    runs: list[QueryRun] = []
    changed = 0
    for text in texts:
        a = real.query(text, top=1, record=False)
        b = alt.query(text, top=1, record=False)
        changed += set(a.fired) != set(b.fired)
        runs.append(QueryRun(text, len(a.fired), len(b.fired), a.context_chars, b.context_chars))
    differ = [
        r
        for r in runs
        if (r.real_fired, r.real_context_chars) != (r.what_if_fired, r.what_if_context_chars)
    ]
    differ.sort(
        key=lambda r: (
            -abs(r.what_if_context_chars - r.real_context_chars),
            -abs(r.what_if_fired - r.real_fired),
            r.query,
        )
    )
    return QueryComparison(
        count=len(runs),
        real_mean_fired=_mean([r.real_fired for r in runs]),
        what_if_mean_fired=_mean([r.what_if_fired for r in runs]),
        real_mean_context_chars=_mean([r.real_context_chars for r in runs]),
        what_if_mean_context_chars=_mean([r.what_if_context_chars for r in runs]),
        changed=changed,
        top=differ[:top],
    )


def what_if(
    brain: Brain,
    start: str | int = 0,
    *,
    threshold: float = 0.0,
    top: int = 20,
    queries: int = 50,
    progress: Progress | None = None,
    **overrides: object,
) -> WhatIfReport:
    """Re-decide the brain's learning from ``start`` with other settings, in a scratch
    brain, and compare the result with the real brain (which is never changed).

    Args:
        brain: an open brain (read-only is enough).
        start: replay after this point: 0 (the whole history), a seq or an ISO time.
        threshold: weight differences of at most this are not counted as changed.
        top: how many edge changes and queries to list.
        queries: how many distinct recorded queries to re-run on both brains.
        progress: receives ``("what-if", done, total)`` while replaying.
        overrides: ``learning.*`` settings (``rule``, ``eta``, ``gamma``,
            ``baseline_rate``, ``weight_human`` ...); None values are ignored.

    Raises:
        InputError: a point outside the history, an unknown rule or setting, a value
            out of range, or bad limits. Nothing is recorded anywhere.
    """
    _check_report(threshold, top)
    if queries < 0:
        raise InputError(f"--queries must be at least 0, got {queries}", "pass --queries 50")
    settings = check_overrides(**overrides)
    seq = point(brain.log, start, "--from")
    with scratch_replay(brain, seq, settings, queries=queries, progress=progress) as r:
        real_t, alt_t = brain.settings()[0], r.brain.settings()[0]
        weights = diff_graphs(
            brain.graph,
            r.brain.graph,
            tiers_before=tiers(real_t),
            tiers_after=tiers(alt_t),
            threshold=threshold,
            top=top,
        )
        compared = compare_queries(brain, r.brain, r.queries, top)
        stats = r.stats
    return WhatIfReport(
        from_seq=seq,
        to_seq=brain.horizon,
        overrides=settings,  # type: ignore[arg-type]
        replay=stats,
        weights=weights,
        queries=compared,
    )
