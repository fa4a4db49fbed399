"""The typed-memory projection: facts (current and retired), the entity index, entity
co-occurrence counts, per-fact access state from recall traces, the evidence reflect
already used for each opinion, and the claims that outcomes confirmed.

A fact an assistant said is a *claim* (``Fact.speaker``); it stays one until an outcome
confirms it (``OutcomeRecorded.confirmed``; retracting that outcome takes it back) or a
current fact that a user or a tool stated says the same (``State.claims``).

NOTE: ``State`` is mutable; ``evolve`` consumes its input. Entity keys are lowercase;
an entity keeps the spelling it was first mentioned with.
"""

from __future__ import annotations

import bisect
import datetime as dt

import msgspec

from ocb_events.schema import (
    Event,
    FactKind,
    FactSpec,
    FactsRecorded,
    FoldRecord,
    OutcomeRecorded,
    RecallTraced,
    Record,
    ReflectRan,
    Retracted,
    Speaker,
)
from projections._codec import struct_codec

DAY_NS = 86_400 * 10**9


class Fact(msgspec.Struct, frozen=True, kw_only=True):
    """A fact as the brain knows it. ``time_ns`` is midnight (UTC) of its day, or when
    it was first recorded for an undated page; ``retired_seq`` is 0 while it is in its
    file."""

    id: str
    kind: FactKind
    content: str
    entities: tuple[str, ...]
    path: str
    start_line: int
    end_line: int
    text_hash: str
    salience: float
    confidence: float
    day: str
    evidence: tuple[str, ...]
    time_ns: int
    created_seq: int
    revised_seq: int
    revisions: int = 0
    retired_seq: int = 0
    speaker: Speaker = "user"
    session: str = ""
    turn: int = 0

    @property
    def source(self) -> str:
        """``path#Lstart-Lend`` (``path#Ln`` for one line)."""
        if self.start_line == self.end_line:
            return f"{self.path}#L{self.start_line}"
        return f"{self.path}#L{self.start_line}-L{self.end_line}"


class Access(msgspec.Struct, frozen=True, array_like=True):
    """When a fact was last returned by recall (ns) and how many times it was."""

    last_ns: int
    count: int


class FileFacts(msgspec.Struct, frozen=True, array_like=True):
    """The content hash a file's facts were read from and their ids in line order."""

    content_hash: str
    ids: tuple[str, ...]


class Entity(msgspec.Struct, kw_only=True):
    """An entity: its first spelling and the ids of current facts mentioning it (sorted)."""

    name: str
    facts: list[str] = msgspec.field(default_factory=list)


class State(msgspec.Struct, kw_only=True):
    """Facts by id, files, entities, co-occurrence (key -> key -> count, both ways),
    access by fact id, evidence used per opinion, and recall counters."""

    seq: int = 0
    facts_seq: int = 0
    next_fact: int = 1
    facts: dict[str, Fact] = msgspec.field(default_factory=dict)
    files: dict[str, FileFacts] = msgspec.field(default_factory=dict)
    entities: dict[str, Entity] = msgspec.field(default_factory=dict)
    co: dict[str, dict[str, int]] = msgspec.field(default_factory=dict)
    access: dict[str, Access] = msgspec.field(default_factory=dict)
    applied: dict[str, tuple[str, ...]] = msgspec.field(default_factory=dict)
    recalls: int = 0
    recalls_over_budget: int = 0
    last_reflect_ns: int = 0
    confirmed: dict[str, int] = msgspec.field(default_factory=dict)
    """Claim id -> the seq of the outcome that confirmed it."""
    claims_seq: int = 0
    """The seq of the last record that changed which claims stand (facts or outcomes)."""

    @property
    def size(self) -> int:
        """How many facts are current."""
        return len({i for f in self.files.values() for i in f.ids})

    def active(self, fact_id: str) -> Fact | None:
        """The fact if it is current (not retired)."""
        f = self.facts.get(fact_id)
        return f if f is not None and not f.retired_seq else None

    def claims(self) -> list[Fact]:
        """The current facts an assistant said that nothing confirmed yet (no outcome,
        and no current fact of a user or a tool saying the same), by id."""
        current = sorted({i for ff in self.files.values() for i in ff.ids})
        facts = [self.facts[i] for i in current]
        said = [f for f in facts if f.speaker == "assistant" and f.id not in self.confirmed]
        if not said:
            return []
        stated = {norm(f.content) for f in facts if f.speaker != "assistant"}
        return [f for f in said if norm(f.content) not in stated]


def norm(text: str) -> str:
    """A fact's content compared without case or spacing."""
    return " ".join(text.lower().split())


def spec_of(f: Fact) -> FactSpec:
    """The spec a fact was last recorded from."""
    return FactSpec(
        id=f.id,
        kind=f.kind,
        content=f.content,
        entities=f.entities,
        start_line=f.start_line,
        end_line=f.end_line,
        text_hash=f.text_hash,
        salience=f.salience,
        confidence=f.confidence,
        day=f.day,
        evidence=f.evidence,
        speaker=f.speaker,
        session=f.session,
        turn=f.turn,
    )


def initial() -> State:
    """No facts."""
    return State()


def day_ns(day: str) -> int | None:
    """Midnight UTC of an ISO day in ns, None when it is not a date."""
    try:
        d = dt.date.fromisoformat(day)
    except ValueError:
        return None
    return (d - dt.date(1970, 1, 1)).days * DAY_NS


def _unlink(state: State, fact: Fact) -> None:
    keys = [e.lower() for e in fact.entities]
    for k in keys:
        ent = state.entities.get(k)
        if ent is None:
            continue
        i = bisect.bisect_left(ent.facts, fact.id)
        if i < len(ent.facts) and ent.facts[i] == fact.id:
            del ent.facts[i]
        if not ent.facts:
            del state.entities[k]
    for a in keys:
        row = state.co.get(a, {})
        for b in keys:
            if a != b and b in row:
                row[b] -= 1
                if row[b] <= 0:
                    del row[b]
        if a in state.co and not row:
            del state.co[a]


def _link(state: State, fact: Fact) -> None:
    keys = [e.lower() for e in fact.entities]
    for name, k in zip(fact.entities, keys, strict=True):
        ent = state.entities.get(k)
        if ent is None:
            ent = state.entities[k] = Entity(name=name)
        bisect.insort(ent.facts, fact.id)
    for a in keys:
        for b in keys:
            if a != b:
                row = state.co.setdefault(a, {})
                row[b] = row.get(b, 0) + 1


def _record(state: State, spec: FactSpec, path: str, rec: Record | FoldRecord) -> None:
    old = state.facts.get(spec.id)
    when = day_ns(spec.day) if spec.day else None
    if when is None:
        when = old.time_ns if old is not None else rec.ts
    changed = old is None or old.text_hash != spec.text_hash or old.retired_seq != 0
    fact = Fact(
        id=spec.id,
        kind=spec.kind,
        content=spec.content,
        entities=spec.entities,
        path=path,
        start_line=spec.start_line,
        end_line=spec.end_line,
        text_hash=spec.text_hash,
        salience=min(1.0, max(0.0, spec.salience)),
        confidence=min(1.0, max(0.0, spec.confidence)),
        day=spec.day,
        evidence=spec.evidence,
        time_ns=when,
        created_seq=old.created_seq if old is not None else rec.seq,
        revised_seq=rec.seq if changed else old.revised_seq,  # type: ignore[union-attr]
        revisions=(old.revisions + (1 if changed else 0)) if old is not None else 0,
        speaker=spec.speaker,
        session=spec.session,
        turn=spec.turn,
    )
    if spec.id in state.confirmed and (old is None or norm(old.content) != norm(spec.content)):
        del state.confirmed[spec.id]  # what was confirmed is not what it says now
    if old is not None and not old.retired_seq:
        _unlink(state, old)
    state.facts[spec.id] = fact
    _link(state, fact)
    if spec.id[:1] == "f" and spec.id[1:].isdigit():
        state.next_fact = max(state.next_fact, int(spec.id[1:]) + 1)


def _file(state: State, ev: FactsRecorded, rec: Record | FoldRecord) -> None:
    before = state.files.get(ev.path)
    keep = {s.id for s in ev.facts}
    for fid in before.ids if before is not None else ():
        old = state.facts.get(fid)
        if fid not in keep and old is not None and not old.retired_seq and old.path == ev.path:
            _unlink(state, old)
            state.facts[fid] = msgspec.structs.replace(old, retired_seq=rec.seq)
    for spec in ev.facts:
        _record(state, spec, ev.path, rec)
    if ev.content_hash:
        state.files[ev.path] = FileFacts(ev.content_hash, tuple(s.id for s in ev.facts))
    else:
        state.files.pop(ev.path, None)
    state.facts_seq = state.claims_seq = rec.seq


FOLDS: tuple[type[Event], ...] = (
    FactsRecorded,
    RecallTraced,
    ReflectRan,
    OutcomeRecorded,
    Retracted,
)
"""The events ``evolve`` folds; every other record only moves ``seq``."""


def evolve(state: State, rec: Record | FoldRecord) -> State:
    """Apply one record (consumes ``state``)."""
    ev = rec.event
    if type(ev) is OutcomeRecorded and not ev.confirmed:  # most outcomes: checked first
        state.seq = rec.seq
        return state
    match ev:
        case FactsRecorded():
            _file(state, ev, rec)
        case RecallTraced(hits=hits, dropped=dropped):
            for h in hits:
                prev = state.access.get(h.fact_id)
                state.access[h.fact_id] = Access(rec.ts, (prev.count if prev else 0) + 1)
            state.recalls += 1
            state.recalls_over_budget += 1 if dropped else 0
        case ReflectRan(changes=changes):
            for c in changes:
                if c.change == "opinion_confidence":
                    used = set(state.applied.get(c.subject, ()))
                    used.update(c.supporting, c.contradicting)
                    state.applied[c.subject] = tuple(sorted(used))
            state.last_reflect_ns = rec.ts
        case OutcomeRecorded(confirmed=confirmed) if confirmed:
            for fid in confirmed:
                state.confirmed.setdefault(fid, rec.seq)
            state.claims_seq = rec.seq
        case Retracted(target_seq=target):
            gone = sorted(f for f, s in state.confirmed.items() if s == target)
            for fid in gone:
                del state.confirmed[fid]
            state.claims_seq = rec.seq if gone else state.claims_seq
        case _:
            pass
    state.seq = rec.seq
    return state


snapshot, restore = struct_codec(State)
