"""The trace projection: where each query trace is in the log, the last trace of
every chat, how many outcomes each trace received, which source last scored it, and
the outcome each idempotency key recorded.

NOTE: ``State`` is mutable; ``evolve`` consumes its input.
"""

from __future__ import annotations

import msgspec

from ocb_events.schema import (
    Event,
    FoldRecord,
    OutcomeRecorded,
    QueryTraced,
    QueryTracedHead,
    Record,
)
from projections._codec import struct_codec


class TraceRef(msgspec.Struct, frozen=True, array_like=True):
    """The seq of a trace's record and its chat id."""

    seq: int
    chat_id: str


class State(msgspec.Struct, kw_only=True):
    """Trace index by id and by chat."""

    seq: int = 0
    by_id: dict[str, TraceRef] = msgspec.field(default_factory=dict)
    last_by_chat: dict[str, str] = msgspec.field(default_factory=dict)
    outcomes: dict[str, int] = msgspec.field(default_factory=dict)
    scored: dict[str, dict[str, list[int]]] = msgspec.field(default_factory=dict)
    """By trace id and reward source, the seqs of its outcomes."""
    requests: dict[str, int] = msgspec.field(default_factory=dict)
    """The seq of the outcome recorded under each request id."""


def initial() -> State:
    """No traces."""
    return State()


FOLDS: tuple[type[Event], ...] = (QueryTraced, OutcomeRecorded)
"""The events ``evolve`` folds; every other record only moves ``seq``."""


def evolve(state: State, rec: Record | FoldRecord) -> State:
    """Apply one record (consumes ``state``)."""
    # dispatched by type rather than by ``match``: a rebuild calls this once for each
    # of hundreds of thousands of records, and class patterns cost twice as much
    ev = rec.event
    if isinstance(ev, (QueryTracedHead, QueryTraced)):
        tid, chat = ev.trace_id, ev.chat_id
        state.by_id[tid] = TraceRef(rec.seq, chat)
        if chat:
            state.last_by_chat[chat] = tid
    elif isinstance(ev, OutcomeRecorded):
        tid, rid = ev.trace_id, ev.request_id
        if tid:
            state.outcomes[tid] = state.outcomes.get(tid, 0) + 1
            state.scored.setdefault(tid, {}).setdefault(ev.source, []).append(rec.seq)
        if rid:
            state.requests[rid] = rec.seq
    state.seq = rec.seq
    return state


snapshot, restore = struct_codec(State)
