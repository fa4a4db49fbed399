"""Taking back a recorded outcome, teacher label or injection (``ocb retract``).

The log is append-only and the history keeps both: a retraction is a new record,
``Retracted``, naming the seq of what it takes back, followed in the same batch by the
reversal it decided (naming the retraction's seq as its cause). Decide, record, fold:
the reversal is computed here from the state, and the fold applies it like any update.

* **An outcome or a teacher label.** Its changes are the records right after it in its
  batch that name it as their cause: an ``EdgesUpdated`` (and for a label recorded with
  ``--relevance`` an ``EdgeRelevanceSet``). For every weight the update changed the
  reversal records minus the change it *made*, ``clip(w0 + d) - w0`` with ``w0`` the
  weight just before it (read from the graph at the target's seq), so a weight nothing
  touched since returns to what it was, and later changes (other outcomes, decay) stay
  as they were; the fold clips to [-1, 1] as always. A reward baseline the update moved
  from ``b0`` to ``b1`` becomes ``b_now - (b1 - b0)`` (``b0`` itself when nothing moved
  it since). A relevance a label set goes back to its previous value while it still
  holds the label's value; a later label's value stays. Edges and nodes removed since
  are skipped and reported. A retracted outcome or label also stops counting as a
  training example of the route model.
* **An injection.** The graph fold removes the node and every edge into or out of it,
  learned ones included (they exist only because of it), so a chunk a correction
  vetoed fires again. Its id is never reused: injecting the same text again creates a
  new node (``correction::2``) whose edges are decided afresh on today's graph.

Refused, with nothing recorded: a seq outside the history or of another kind of record,
a record already retracted, a retraction (to undo one, record the outcome, label or
injection again: that re-decides it on today's graph, which is what a second thought
means, where replaying an old update onto weights that moved since would not), a chunk
(it comes from the workspace: edit the file), and a brain opened as of a past point.

``ocb.whatif`` re-decides the reversal of a re-decided update with these same pure
functions (``before_of``, ``decide_retract``), so a what-if with the recorded settings
still reproduces the log record for record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from ocb.engine.learning import group_by_source
from ocb.engine.routes import reverse_route
from ocb.graph.query import trace_of
from ocb.redaction import redact_input, redact_key
from ocb.store import Store
from ocb_events.errors import InputError, unknown
from ocb_events.protocol import EventLog
from ocb_events.schema import (
    STOP,
    EdgeDelta,
    EdgeRelevanceSet,
    EdgesUpdated,
    EdgeValues,
    Event,
    NodeInjected,
    NodeValue,
    OutcomeRecorded,
    Record,
    Retracted,
    RetractKind,
    RouteUpdated,
    TeacherLabeled,
    tag_of,
)
from projections.graph import CHUNK, State as GraphState
from projections.routes import State as RoutesState
from replay import load_states

Pair = tuple[str, str]
Change = EdgesUpdated | EdgeRelevanceSet | RouteUpdated
KINDS: dict[type, RetractKind] = {
    OutcomeRecorded: "outcome",
    TeacherLabeled: "label",
    NodeInjected: "injection",
}
_SCAN = 4096  # records read per window when looking back for an outcome


class Before(msgspec.Struct, frozen=True):
    """What the graph held just before an update, for the pairs and nodes it touched:
    weights (target STOP: the stop weight), reward baselines and relevance. A pair or
    node missing here did not exist then, so the update did not change it."""

    weights: dict[Pair, float] = {}
    baselines: dict[str, float] = {}
    relevance: dict[Pair, float] = {}


class Target(msgspec.Struct, frozen=True):
    """A record to retract: its seq, kind, the record itself, and the changes it
    caused (the records after it naming it as their cause)."""

    seq: int
    kind: RetractKind
    event: OutcomeRecorded | TeacherLabeled | NodeInjected
    changes: tuple[Change, ...] = ()


class Moved(msgspec.Struct, frozen=True):
    """One value a retraction changes: a weight (``target`` STOP: a stop weight), a
    relevance or a baseline (``target`` ""), from ``before`` to ``after`` (an edge a
    removed node takes with it: ``after`` 0)."""

    source: str
    target: str
    before: float
    after: float


class Decision(msgspec.Struct, frozen=True):
    """A retraction's events and what they change: weights, baselines and relevance
    restored, the edges a removed node takes with it, what was skipped, and the route
    credits moved back (``source``: the route, ``target``: the node)."""

    events: list[Event]
    weights: list[Moved]
    baselines: list[Moved]
    relevance: list[Moved]
    removed: list[Moved]
    skipped: list[str]
    credits: list[Moved] = msgspec.field(default_factory=list)


# --------------------------------------------------------------------------- pure decisions


def _clip(w: float) -> float:
    return -1.0 if w < -1.0 else 1.0 if w > 1.0 else w


def _weight(g: GraphState, pair: Pair) -> float | None:
    src, dst = pair
    if dst == STOP:
        return g.stop.get(src, 0.0) if src in g.nodes else None
    edge = (g.out.get(src) or {}).get(dst)
    return None if edge is None else edge.weight


def _relevance(g: GraphState, pair: Pair) -> float | None:
    edge = (g.out.get(pair[0]) or {}).get(pair[1])
    return None if edge is None else edge.relevance


def before_of(g: GraphState, changes: Sequence[Change]) -> Before:
    """The values ``changes`` touched, as ``g`` holds them (``g``: the graph just
    before the first of them was folded)."""
    weights: dict[Pair, float] = {}
    baselines: dict[str, float] = {}
    relevance: dict[Pair, float] = {}
    for ev in changes:
        if isinstance(ev, EdgesUpdated):
            for d in ev.deltas:
                w = _weight(g, (d.source, d.target))
                if w is not None:
                    weights.setdefault((d.source, d.target), w)
            for b in ev.baselines:
                if b.node in g.nodes:
                    baselines.setdefault(b.node, g.baseline.get(b.node, 0.0))
        elif isinstance(ev, EdgeRelevanceSet):
            for u in ev.updates:
                for t in u.targets:
                    r = _relevance(g, (u.source, t))
                    if r is not None:
                        relevance.setdefault((u.source, t), r)
    return Before(weights, baselines, relevance)


def _made(update: EdgesUpdated, before: Before) -> dict[Pair, float]:
    """The change the fold made to each pair (deltas applied in order): the recorded
    delta itself, or where the fold clipped it, the part that stayed."""
    now = dict(before.weights)
    made: dict[Pair, float] = {}
    for d in update.deltas:
        pair = (d.source, d.target)
        w = now.get(pair)
        if w is None:
            continue
        new = w + d.delta
        change = d.delta if -1.0 <= new <= 1.0 else _clip(new) - w
        made[pair] = made.get(pair, 0.0) + change
        now[pair] = _clip(new)
    return made


def _reverse_update(
    update: EdgesUpdated, before: Before, g: GraphState, out: Decision
) -> tuple[list[EdgeDelta], list[NodeValue]]:
    deltas: list[EdgeDelta] = []
    for pair, change in sorted(_made(update, before).items()):
        now = _weight(g, pair)
        if change == 0.0:
            continue
        if now is None:
            out.skipped.append(f"{pair[0]} -> {pair[1]}: gone since")
            continue
        deltas.append(EdgeDelta(source=pair[0], target=pair[1], delta=-change))
        out.weights.append(Moved(pair[0], pair[1], now, _clip(now - change)))
    values: list[NodeValue] = []
    moved = {b.node: b.value for b in update.baselines}  # the last value set wins
    for node in sorted(moved):
        old = before.baselines.get(node)
        if old is None:
            continue
        if node not in g.nodes:
            out.skipped.append(f"baseline of {node}: gone since")
            continue
        now = g.baseline.get(node, 0.0)
        restored = old if now == moved[node] else now - (moved[node] - old)
        if restored != now:
            values.append(NodeValue(node=node, value=restored))
            out.baselines.append(Moved(node, "", now, restored))
    return deltas, values


def _reverse_relevance(
    ev: EdgeRelevanceSet, before: Before, g: GraphState, out: Decision
) -> list[EdgeValues]:
    set_to = {
        (u.source, t): v for u in ev.updates for t, v in zip(u.targets, u.values, strict=False)
    }
    by_source: dict[str, list[tuple[str, float]]] = {}
    for pair in sorted(set_to):
        old, now = before.relevance.get(pair), _relevance(g, pair)
        if old is None:
            continue
        if now is None:
            out.skipped.append(f"relevance of {pair[0]} -> {pair[1]}: edge gone since")
        elif now == _clip(set_to[pair]) and now != old:
            by_source.setdefault(pair[0], []).append((pair[1], old))
            out.relevance.append(Moved(pair[0], pair[1], now, old))
    return [
        EdgeValues(source=s, targets=tuple(t for t, _ in vs), values=tuple(v for _, v in vs))
        for s, vs in sorted(by_source.items())
    ]


def decide_retract(
    target: Target, g: GraphState, before: Before, *, retraction_seq: int, reason: str = "",
    routes: RoutesState | None = None,
) -> Decision:  # fmt: skip
    """The retraction of ``target`` on the graph ``g`` and the routes ``routes`` (now),
    given ``before`` (what its changes found): a ``Retracted`` record first, then the
    reversal naming it as cause."""
    node_id = target.event.node_id if isinstance(target.event, NodeInjected) else ""
    head = Retracted(target_seq=target.seq, kind=target.kind, node_id=node_id, reason=reason)
    out = Decision([head], [], [], [], [], [])
    if node_id:
        out.removed.extend(
            Moved(node_id, t, e.weight, 0.0) for t, e in sorted((g.out.get(node_id) or {}).items())
        )
        out.removed.extend(
            Moved(s, node_id, g.out[s][node_id].weight, 0.0) for s in g.incoming(node_id)
        )
        return out
    deltas: list[EdgeDelta] = []
    values: list[NodeValue] = []
    relevance: list[EdgeValues] = []
    back: list[RouteUpdated] = []
    for ev in target.changes:
        if isinstance(ev, EdgesUpdated):
            d, v = _reverse_update(ev, before, g, out)
            deltas += d
            values += v
        elif isinstance(ev, EdgeRelevanceSet):
            relevance += _reverse_relevance(ev, before, g, out)
        else:
            back += _reverse_route(ev, routes or RoutesState(), retraction_seq, out)
    if deltas or values:
        out.events.append(
            EdgesUpdated(
                updates=group_by_source(deltas),
                rule="retract",
                cause_seq=retraction_seq,
                baselines=tuple(values),
            )
        )
    if relevance:
        out.events.append(EdgeRelevanceSet(updates=tuple(relevance), cause_seq=retraction_seq))
    out.events.extend(back)
    return out


def _reverse_route(
    ev: RouteUpdated, routes: RoutesState, retraction_seq: int, out: Decision
) -> list[RouteUpdated]:
    back = reverse_route(ev, routes, retraction_seq)
    if back is None:
        out.skipped.append(f"route {ev.route_id}: gone since")
        return []
    now = routes.routes[ev.route_id].credits
    for c in back.credits:
        was = now.get(c.node, 0.0)
        out.credits.append(Moved(ev.route_id, c.node, was, was + c.delta))
    return [back]


class Held:
    """What a later retraction needs of the record it names, kept by a replay that
    re-decides the record's changes (``ocb.whatif``): the record, its changes as
    replayed, and the values they found (gathered one change at a time, just before
    each is folded)."""

    def __init__(self, event: OutcomeRecorded | TeacherLabeled) -> None:
        self.event = event
        self.changes: list[Change] = []
        self.before = Before()

    def keep(self, g: GraphState, change: Change) -> None:
        """Add a change, with the values it finds in ``g`` (the scratch graph now)."""
        found = before_of(g, [change])
        self.before = Before(
            self.before.weights | found.weights,
            self.before.baselines | found.baselines,
            self.before.relevance | found.relevance,
        )
        self.changes.append(change)


# --------------------------------------------------------------------------- finding the target


def changes_of(log: EventLog, seq: int, end: int) -> tuple[Change, ...]:
    """The changes an outcome or a label at ``seq`` caused: the records right after it
    (up to ``end``) that name it as their cause."""
    found: list[Change] = []
    for rec in log.read(seq + 1, min(seq + 3, end)):
        ev = rec.event
        if (
            not isinstance(ev, EdgesUpdated | EdgeRelevanceSet | RouteUpdated)
            or ev.cause_seq != seq
        ):
            break
        found.append(ev)
    return tuple(found)


def target_of(rec: Record, g: GraphState, changes: tuple[Change, ...] = ()) -> Target:
    """The record at a seq as something to retract.

    Raises:
        InputError: a retraction, another kind of record, or one already retracted.
    """
    ev = rec.event
    if isinstance(ev, Retracted):
        raise InputError(
            f"seq {rec.seq} is a retraction, which cannot be retracted",
            "record the outcome, label or injection again instead",
        )
    kind = KINDS.get(type(ev))
    if kind is None:
        raise InputError(
            f"the record at seq {rec.seq} ({tag_of(ev)}) cannot be retracted",
            "retract an outcome_recorded, teacher_labeled or node_injected record",
        )
    done = g.retracted.get(rec.seq)
    if done is not None:
        raise InputError(
            f"the {kind} at seq {rec.seq} was already retracted at seq {done}",
            f"see it with: ocb events --since {done - 1} --limit 1",
        )
    if isinstance(ev, NodeInjected) and ev.node_id not in g.nodes:
        raise InputError(
            f"node {ev.node_id} of the injection at seq {rec.seq} is gone",
            "nothing is left to retract",
        )
    return Target(rec.seq, kind, ev, changes)  # type: ignore[arg-type]


def _last_outcome(store: Store, match: Callable[[OutcomeRecorded], bool], lowest: int) -> int:
    """The seq of the newest outcome ``match`` accepts that is not retracted (0: none),
    read backwards in windows so a recent one is found without reading the log."""
    done = store.graph.retracted
    hi = store.horizon
    while hi >= max(lowest, 1):
        lo = max(lowest, 1, hi - _SCAN + 1)
        found = [
            r.seq
            for r in store.log.read(lo, hi, light=True)
            if isinstance(r.event, OutcomeRecorded) and r.seq not in done and match(r.event)
        ]
        if found:
            return found[-1]
        hi = lo - 1
    return 0


def outcome_seq(store: Store, *, trace_id: str = "", chat_id: str = "", source: str = "") -> int:
    """The newest outcome not yet retracted of a trace, or of a chat (an outcome given
    the chat's id, or scoring one of its traces), optionally from one reward source.

    Raises:
        InputError: an unknown trace or chat, or no such outcome.
    """
    traces = store.state("traces")
    if trace_id:
        ref = traces.by_id.get(trace_id)
        if ref is None:
            trace_of(store, trace_id)  # raises the unknown-trace error, with close ids
        seq = _last_outcome(
            store, lambda o: o.trace_id == trace_id and source in ("", o.source), ref.seq
        )
        what = f"trace {trace_id}"
    else:
        if chat_id not in traces.last_by_chat:
            raise unknown(
                "chat id",
                chat_id,
                sorted(traces.last_by_chat),
                "pass `chat_id` to ocb query first",
                param="chat_id",
            )

        def of_chat(o: OutcomeRecorded) -> bool:
            ref = traces.by_id.get(o.trace_id)
            in_chat = o.chat_id == chat_id or (ref is not None and ref.chat_id == chat_id)
            return in_chat and source in ("", o.source)

        seq = _last_outcome(store, of_chat, 1)
        what = f"chat {chat_id}"
    if not seq:
        src = f" from source {source}" if source else ""
        raise InputError(
            f"{what} has no outcome{src} left to retract",
            "list outcomes with: ocb events --type outcome_recorded",
        )
    return seq


# --------------------------------------------------------------------------- the command


class RetractReport(msgspec.Struct, frozen=True):
    """What a retraction recorded (``recorded`` False: a dry run, ``seq`` the seq it
    would get): the record it takes back and every value it moves."""

    seq: int
    recorded: bool
    target_seq: int
    kind: str
    detail: str
    reason: str
    weights: list[Moved]
    baselines: list[Moved]
    relevance: list[Moved]
    removed_node: str
    removed: list[Moved]
    skipped: list[str]
    credits: list[Moved] = msgspec.field(default_factory=list)
    """Route credits moved back (``source``: the route, ``target``: the node)."""


def _detail(t: Target) -> str:
    ev = t.event
    if isinstance(ev, OutcomeRecorded):
        what = f"trace {ev.trace_id}" if ev.trace_id else "path " + ",".join(ev.fired_ids)
        return f"outcome {ev.reward:+g} ({ev.source}) of {what}"
    if isinstance(ev, TeacherLabeled):
        return f"teacher label on {ev.node} at hop {ev.hop} of trace {ev.trace_id}"
    return f"{ev.node_type} {ev.node_id}: {ev.content}"


def _choose(
    store: Store, seq: int | None, node_id: str, trace_id: str, chat_id: str, source: str
) -> int:
    """The seq of the record named by exactly one of the four ways of naming it."""
    given = [x for x in (seq is not None, bool(node_id), bool(trace_id), bool(chat_id)) if x]
    if len(given) != 1:
        raise InputError(
            "retract needs exactly one of `seq`, `node_id`, `trace_id` or `chat_id`",
            "e.g. `seq=1234`, or `chat_id=c1` for that chat's last outcome",
            param=("seq", "node_id", "trace_id", "chat_id"),
        )
    if source and not (trace_id or chat_id):
        raise InputError(
            "`source` picks among the outcomes of `trace_id` or `chat_id`",
            "add one of them",
            param=("source", "trace_id", "chat_id"),
        )
    if trace_id or chat_id:
        return outcome_seq(store, trace_id=trace_id, chat_id=chat_id, source=source)
    if node_id:
        node = store.graph.nodes.get(node_id)
        if node is None:
            known = sorted(n for n, v in store.graph.nodes.items() if v.kind != CHUNK)
            hint = "list injected nodes with: ocb events --type node_injected"
            raise unknown("injected node", node_id, known, hint, " (retracted already?)")
        if node.kind == CHUNK:
            raise InputError(
                f"{node_id} is a chunk of {node.path}, not an injected node",
                "chunks come from the workspace: edit the file, then run ocb init",
            )
        created: int = node.created_seq
        return created
    assert seq is not None
    if not 1 <= seq <= store.horizon:
        raise InputError(
            f"no record at seq {seq}: the history holds 1 to {store.horizon}",
            "find the seq with: ocb events --type outcome_recorded",
        )
    return seq


def retract(
    store: Store,
    *,
    seq: int | None = None,
    node_id: str = "",
    trace_id: str = "",
    chat_id: str = "",
    source: str = "",
    reason: str = "",
    dry_run: bool = False,
) -> RetractReport:
    """Retract an outcome, a teacher label or an injection (see the module docstring)
    named by its seq, by the injected node's id, or as the newest outcome of a trace or
    a chat (``source``: only outcomes from that reward source).

    Raises:
        InputError: nothing or more than one thing named, an unknown seq, node, trace
            or chat, a record that cannot be retracted or already was, a brain opened
            as of a past point. Nothing is recorded.
    """
    if store.as_of is not None:
        raise InputError(
            f"this brain is opened as of seq {store.as_of} and records nothing",
            "drop `as_of` to retract",
            param="as_of",
        )
    store.load("config", "graph", "traces", "routes")
    secrets = store.secrets()
    chat_id = redact_key(store.warn, secrets, "chat id", chat_id)
    reason = redact_input(store.warn, secrets, "retract reason", reason)
    got: list[tuple[int, int, Target, Decision]] = []

    def decide(last: int) -> list[Event]:
        at = _choose(store, seq, node_id, trace_id, chat_id, source)
        rec = next(iter(store.log.read(at, at)))
        changes = changes_of(store.log, at, store.horizon) if type(rec.event) in KINDS else ()
        target = target_of(rec, store.graph, changes)
        before = Before()
        if changes:  # the graph as the changes found it: the target's seq
            then = load_states(store.log, store.snapshots, ["graph"], to_seq=at, warn=store.warn)
            before = before_of(then["graph"], changes)
        d = decide_retract(
            target, store.graph, before, retraction_seq=last + 1, reason=reason,
            routes=store.state("routes"),
        )  # fmt: skip
        got.append((last, at, target, d))
        return [] if dry_run else d.events

    store.transact("human", decide)
    last, at, target, d = got[-1]
    return RetractReport(
        seq=last + 1,
        recorded=not dry_run,
        target_seq=at,
        kind=target.kind,
        detail=_detail(target),
        reason=reason,
        weights=d.weights,
        baselines=d.baselines,
        relevance=d.relevance,
        removed_node=target.event.node_id if isinstance(target.event, NodeInjected) else "",
        removed=d.removed,
        skipped=d.skipped,
        credits=d.credits,
    )
