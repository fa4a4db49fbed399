"""The config projection: settings recorded as ConfigChanged events, so that time
travel runs with the settings that were in force.

NOTE: ``State`` is mutable; ``evolve`` consumes its input.
"""

from __future__ import annotations

import msgspec

from ocb_events.schema import ConfigChanged, Event, FoldRecord, Record
from projections._codec import struct_codec

Value = float | int | bool | str


class State(msgspec.Struct, kw_only=True):
    """Every setting changed so far, by key."""

    seq: int = 0
    values: dict[str, Value] = msgspec.field(default_factory=dict)


def initial() -> State:
    """No setting changed: every default is in force."""
    return State()


FOLDS: tuple[type[Event], ...] = (ConfigChanged,)
"""The events ``evolve`` folds; every other record only moves ``seq``."""


def evolve(state: State, rec: Record | FoldRecord) -> State:
    """Apply one record (consumes ``state``)."""
    match rec.event:
        case ConfigChanged(key=key, value=value):
            state.values[key] = value
        case _:
            pass
    state.seq = rec.seq
    return state


snapshot, restore = struct_codec(State)
