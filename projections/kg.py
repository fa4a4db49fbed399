"""The current-facts projection: subject-predicate-value statements with their whole
history. The latest statement of a (subject, predicate) is its current value.

NOTE: ``State`` is mutable; ``evolve`` consumes its input. Keys are lowercase
(``subject\\x1fpredicate``); the spelling of the latest statement is kept.
"""

from __future__ import annotations

import msgspec

from ocb_events.schema import Event, FoldRecord, KgFactSet, Record
from projections._codec import struct_codec

SEP = "\x1f"


class Statement(msgspec.Struct, frozen=True, array_like=True):
    """One statement: value, source, when (ns) and the seq that recorded it."""

    value: str
    source: str
    ts: int
    seq: int


class Entry(msgspec.Struct, kw_only=True):
    """A subject's predicate and every statement of it, oldest first."""

    subject: str
    predicate: str
    history: list[Statement] = msgspec.field(default_factory=list)


class State(msgspec.Struct, kw_only=True):
    """Entries by ``key(subject, predicate)``."""

    seq: int = 0
    entries: dict[str, Entry] = msgspec.field(default_factory=dict)


def key(subject: str, predicate: str) -> str:
    """The entry key of a subject and predicate (case and outer spaces ignored)."""
    return f"{subject.strip().lower()}{SEP}{predicate.strip().lower()}"


def initial() -> State:
    """No statements."""
    return State()


FOLDS: tuple[type[Event], ...] = (KgFactSet,)
"""The events ``evolve`` folds; every other record only moves ``seq``."""


def evolve(state: State, rec: Record | FoldRecord) -> State:
    """Apply one record (consumes ``state``)."""
    match rec.event:
        case KgFactSet(subject=subject, predicate=predicate, value=value, source=source):
            k = key(subject, predicate)
            entry = state.entries.get(k)
            if entry is None:
                entry = state.entries[k] = Entry(subject=subject, predicate=predicate)
            entry.subject, entry.predicate = subject, predicate
            entry.history.append(Statement(value, source, rec.ts, rec.seq))
        case _:
            pass
    state.seq = rec.seq
    return state


snapshot, restore = struct_codec(State)
