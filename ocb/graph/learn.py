"""Outcomes: deciding one (the trajectory of a trace and the edge deltas it causes) and
recording it on a store, once per trace and reward source.

What the answer cited (``cited``: ``path#L12-L20``, ``path#L12``, ``path``) is mapped to
the chunks the trace fired (``ocb.engine.citations``) and credited as ``used``. An answer
that cited something, none of it fired, used nothing the brain gave it: its positive
outcome is recorded as 0 (neutral), so that no chunk it did not use is credited, and
the citations that named nothing are reported."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import msgspec

from ocb.engine.citations import Citation, match_citations
from ocb.engine.claims import confirmed_by
from ocb.engine.learning import decide_deltas, group_by_source, rule_of
from ocb.engine.policy import tier_of
from ocb.engine.routes import decide_route
from ocb.graph.query import trace_of
from ocb.redaction import redact_key
from ocb.reports import LearnReport
from ocb.settings import REWARD_SOURCES, Learning, Routes, Traversal, actor_of
from ocb.store import Store
from ocb_events.errors import InputError, unknown
from ocb_events.schema import (
    Candidate,
    EdgeDelta,
    EdgesUpdated,
    Event,
    OutcomeRecorded,
    QueryTraced,
    RouteUpdated,
    Step,
)
from projections.graph import State
from projections.routes import State as RoutesState


def check_outcome(outcome: float) -> float:
    """The outcome as a float in [-1, 1].

    Raises:
        InputError: NaN, infinite or out of range.
    """
    if (
        not isinstance(outcome, (int, float))
        or not math.isfinite(outcome)
        or not -1 <= outcome <= 1
    ):
        raise InputError(
            f"outcome must be a number in [-1, 1], got {outcome}",
            "use `outcome=1` for a good answer, -1 for a bad one",
            param="outcome",
        )
    return float(outcome)


def steps_from_ids(graph: State, ids: Sequence[str], s: Traversal) -> list[Step]:
    """A trajectory through explicitly listed nodes: one step per consecutive pair
    joined by an edge, with the node's current edges as candidates.

    Raises:
        InputError: an id names no node.
    """
    for nid in ids:
        if nid not in graph.nodes:
            raise unknown("node", nid, sorted(graph.nodes), "list node ids from `ocb query --json`")
    steps: list[Step] = []
    for hop, (a, b) in enumerate(zip(ids, ids[1:], strict=False), 1):
        out = graph.out.get(a, {})
        if b not in out:
            continue
        cands = [
            Candidate(target=v, weight=e.weight, logit=e.weight, tier=tier_of(e.weight, s))
            for v, e in sorted(out.items())
            if v == b or (e.weight > s.inhibitory and tier_of(e.weight, s) != "dormant")
        ]
        steps.append(
            Step(
                hop=hop,
                node=a,
                candidates=tuple(cands),
                stop_logit=graph.stop.get(a, 0.0),
                chosen=b,
            )
        )
    return steps


def check_used(graph: State, trace: QueryTraced, used: Sequence[str], reward: float) -> None:
    """``used`` names nodes that fired in ``trace``, for a positive outcome.

    Raises:
        InputError: a negative or zero outcome, ids that name no node, or nodes that
            did not fire in the trace (all named).
    """
    if not used:
        return
    if reward <= 0:
        raise InputError(
            "`used` names what a good answer used, but the outcome is not positive",
            "give a positive `outcome`, or leave out `used`",
            param=("used", "outcome"),
        )
    missing = sorted({u for u in used if u not in graph.nodes})
    if missing:
        raise unknown(
            "node", missing[0], sorted(graph.nodes), "list node ids from `ocb query --json`"
        )
    fired = set(trace.fired)
    idle = sorted({u for u in used if u not in fired})
    if idle:
        raise InputError(
            f"`used` names nodes that did not fire in trace {trace.trace_id}: {', '.join(idle)}",
            f"pass only ids from the trace's fired list: {', '.join(trace.fired) or '(none)'}",
            param="used",
        )


class RouteInputs(msgspec.Struct, frozen=True):
    """What the ``route`` rule decides from: the routes and the graph as they are, the
    trace scored and the route settings."""

    routes: RoutesState
    graph: State
    trace: QueryTraced
    settings: Routes


class Learned(msgspec.Struct, frozen=True):
    """An outcome decided: its record, the weight update it causes (None when it moves
    no weight and no baseline) and the route update (None when no route changes)."""

    outcome: OutcomeRecorded
    update: EdgesUpdated | None = None
    route: RouteUpdated | None = None

    @property
    def events(self) -> list[Event]:
        """The events to record, in order."""
        out: list[Event] = [self.outcome]
        return out + [e for e in (self.update, self.route) if e is not None]

    @property
    def deltas(self) -> list[EdgeDelta]:
        return list(self.update.deltas) if self.update is not None else []


def decide_learn(
    steps: Sequence[Step],
    reward: float,
    s: Learning,
    *,
    source: str,
    damping: float,
    tau: float,
    outcome_seq: int,
    baselines: Mapping[str, float] | None = None,
    trace_id: str = "",
    chat_id: str = "",
    fired_ids: Sequence[str] = (),
    request_id: str = "",
    used: Sequence[str] = (),
    route: RouteInputs | None = None,
    cited: Sequence[str] = (),
    confirmed: Sequence[str] = (),
) -> Learned:
    """The outcome and the changes it causes (cause_seq = the outcome's seq): under
    the ``route`` rule the change of the trace's route (``route``; nothing without
    one), else the weight changes with the new reward baselines of the nodes it passed
    through.

    Raises:
        InputError: a bad outcome or reward source.
    """
    reward = check_outcome(reward)
    if source not in REWARD_SOURCES:
        raise InputError(
            f"unknown reward source {source!r}", f"use one of: {', '.join(REWARD_SOURCES)}"
        )
    outcome = OutcomeRecorded(
        reward=reward,
        source=source,  # type: ignore[arg-type]
        trace_id=trace_id,
        chat_id=chat_id,
        fired_ids=tuple(fired_ids),
        request_id=request_id,
        used=tuple(sorted(set(used))),
        rule=s.rule,
        cited=tuple(cited),
        confirmed=tuple(confirmed),
    )
    if rule_of(s.rule).learns_routes:
        if route is None:
            return Learned(outcome)
        got = decide_route(
            route.routes, route.graph, route.trace, reward, route.settings,
            used=frozenset(used), outcome_seq=outcome_seq,
        )  # fmt: skip
        return Learned(outcome, route=got)
    d = decide_deltas(
        steps, reward, s, source=source, damping=damping, tau=tau, baselines=baselines
    )
    if not (d.deltas or d.baselines):
        return Learned(outcome)
    update = EdgesUpdated(
        updates=group_by_source(d.deltas),
        rule=s.rule,
        cause_seq=outcome_seq,
        params=d.params,
        baselines=d.baselines,
    )
    return Learned(outcome, update)


# --------------------------------------------------------------------------- on a store


class _Target(msgspec.Struct):
    """What an outcome scores: the trajectory and its traversal's settings, the trace
    (with the route inputs, none for an explicit path), the reward to record, the ids
    the answer used (given, and with what its citations named), the citations that
    named fired chunks and those that named none."""

    steps: list[Step]
    damping: float
    tau: float
    trace_id: str = ""
    route: RouteInputs | None = None
    reward: float = 0.0
    given: tuple[str, ...] = ()
    used: tuple[str, ...] = ()
    cites: list[Citation] = msgspec.field(default_factory=list)
    unmatched: list[str] = msgspec.field(default_factory=list)


def _of_trace(
    store: Store, trace_id: str, chat_id: str, outcome: float, used: Sequence[str],
    cited: Sequence[str], source: str, again: bool,
) -> _Target:  # fmt: skip
    """The target of an outcome of a trace, its ``used`` and ``cited`` checked and mapped.

    Raises:
        InputError: see ``Brain.learn``.
    """
    scored = trace_of(store, trace_id, chat_id)
    reward = check_outcome(outcome)
    if cited and reward <= 0:
        raise InputError(
            "`cited` names what a good answer cited, but the outcome is not positive",
            "give a positive `outcome`, or leave out `cited`",
            param=("cited", "outcome"),
        )
    check_used(store.graph, scored, used, reward)
    _check_not_scored(store, scored.trace_id, source, again)
    matched, cites, unmatched = match_citations(store.graph, scored.fired, cited)
    if cited and not matched and not used:
        reward = 0.0  # it used nothing this trace gave it: credit nothing
    route = RouteInputs(store.state("routes"), store.graph, scored, store.setting(Routes))
    p = scored.params
    return _Target(
        list(scored.steps), p.damping, p.tau, scored.trace_id, route, reward,
        tuple(used), tuple(sorted({*used, *matched})), cites, unmatched,
    )  # fmt: skip


def learn(
    store: Store,
    outcome: float,
    *,
    trace_id: str = "",
    chat_id: str = "",
    fired_ids: Sequence[str] = (),
    rule: str | None = None,
    source: str = "human",
    request_id: str = "",
    again: bool = False,
    used: Sequence[str] = (),
    cited: Sequence[str] = (),
    actor: str = "cli",
    **learning: object,
) -> LearnReport:
    """Score a trace and record, as ``actor``, the changes the learning rule decides
    (see ``Brain.learn`` for the arguments and the errors)."""
    store.load("config", "graph", "traces", "routes")
    secrets = store.secrets()  # keys are recorded, and found again, redacted
    chat_id = redact_key(store.warn, secrets, "chat id", chat_id)
    request_id = redact_key(store.warn, secrets, "request id", request_id)
    done = store.state("traces").requests.get(request_id) if request_id else None
    if done is not None:
        return _learn_report(store, done)
    trav = store.setting(Traversal)
    settings = store.setting(Learning, rule=rule, **learning)
    if fired_ids:
        if used or cited:
            name = "used" if used else "cited"
            raise InputError(
                f"`{name}` goes with a trace",
                "pass `trace_id=ID` or `chat_id=ID`",
                param=(name, "trace_id", "chat_id"),
            )
        steps = steps_from_ids(store.graph, list(fired_ids), trav)
        target = _Target(steps, trav.damping, trav.tau, reward=check_outcome(outcome))
        settings = path_rule(settings)
    elif trace_id or chat_id:
        target = _of_trace(store, trace_id, chat_id, outcome, used, cited, source, again)
    else:
        raise InputError(
            "nothing to learn from",
            "pass `trace_id=ID`, `chat_id=ID` or `fired_ids=A,B,C`",
            param=("trace_id", "chat_id", "fired_ids"),
        )
    decided: list[Learned] = []

    def decide(seq: int) -> list[Event]:
        decided.append(decide_learn(
            target.steps, target.reward, settings, source=source, damping=target.damping,
            tau=target.tau, outcome_seq=seq + 1, baselines=store.graph.baseline,
            trace_id=target.trace_id, chat_id=chat_id, fired_ids=fired_ids,
            request_id=request_id, used=target.used, route=target.route, cited=cited,
            confirmed=_confirmed(store, target, source),
        ))  # fmt: skip
        return decided[-1].events

    seq = store.transact(actor_of(actor), decide)[0].seq
    return _report(seq, target.trace_id, settings.rule, decided[-1], target.unmatched)


def _confirmed(store: Store, target: _Target, source: str) -> list[str]:
    """The claims this outcome confirms (``ocb.engine.claims.confirmed_by``)."""
    if target.route is None or target.reward <= 0 or not (target.given or target.cites):
        return []
    store.load("memory")
    return confirmed_by(
        store.state("memory"), store.graph, target.given, target.cites,
        reward=target.reward, source=source,
    )  # fmt: skip


def path_rule(s: Learning) -> Learning:
    """The settings an outcome of an explicit node path learns with: a path has no
    question to anchor a route to, so under a rule that learns routes it teaches the
    edges with the rule's ``path`` (``pg``; see ``ocb.engine.learning.RULES``)."""
    path = rule_of(s.rule).path
    return msgspec.structs.replace(s, rule=path) if path else s


def _report(
    seq: int, trace_id: str, rule: str, got: Learned, unmatched: Sequence[str]
) -> LearnReport:
    out = got.outcome
    r = got.route
    return LearnReport(
        seq, trace_id, rule, out.source, out.reward, got.deltas,
        route=r.route_id if r is not None else "",
        credits={c.node: round(c.delta, 6) for c in r.credits} if r is not None else {},
        used=list(out.used), unmatched=list(unmatched), confirmed=list(out.confirmed),
    )  # fmt: skip


def _check_not_scored(store: Store, trace_id: str, source: str, again: bool) -> None:
    """A trace is scored once per source (a retracted outcome does not count)."""
    seqs = store.state("traces").scored.get(trace_id, {}).get(source, [])
    live = [s for s in seqs if s not in store.graph.retracted]
    if live and not again:
        raise InputError(
            f"trace {trace_id} was already scored by {source} (outcome at seq {live[-1]})",
            "pass `again` to score it once more, or give every attempt a `request_id` "
            "so that a retry is recorded once",
            param=("again", "request_id"),
        )


def _learn_report(store: Store, outcome_seq: int) -> LearnReport:
    """The report of an outcome already in the log (``recorded`` False)."""
    recs = list(store.log.read(outcome_seq, outcome_seq + 2))
    out = recs[0].event
    assert isinstance(out, OutcomeRecorded)
    caused = [r.event for r in recs[1:] if getattr(r.event, "cause_seq", 0) == outcome_seq]
    upd = next((e for e in caused if isinstance(e, EdgesUpdated)), None)
    route = next((e for e in caused if isinstance(e, RouteUpdated)), None)
    rule = upd.rule if upd is not None else (out.rule or "route") if route is not None else ""
    got = Learned(out, upd, route)
    unmatched: list[str] = []
    if out.cited and out.trace_id:
        fired = trace_of(store, out.trace_id).fired
        unmatched = match_citations(store.graph, fired, out.cited)[2]
    report = _report(
        outcome_seq, out.trace_id, rule or store.setting(Learning).rule, got, unmatched
    )
    return msgspec.structs.replace(report, recorded=False)
