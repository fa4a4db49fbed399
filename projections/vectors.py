"""The vector projection: which content-addressed blob row holds each node's vector.

Vectors themselves live in the brain's blob store; this fold only maps node ids to
``(blob, row)`` so that replay never calls an embedder. NOTE: ``State`` is mutable;
``evolve`` consumes its input.
"""

from __future__ import annotations

import msgspec

from ocb_events.schema import (
    EmbedderConfigured,
    Event,
    FileChanged,
    FileRemoved,
    FoldRecord,
    NodesEmbedded,
    Record,
)
from projections._codec import struct_codec


class VecRef(msgspec.Struct, frozen=True, array_like=True):
    """Row ``row`` of blob ``blob`` (sha256 hex of the blob's bytes)."""

    blob: str
    row: int


class State(msgspec.Struct, kw_only=True):
    """The embedder in force and the vector of every embedded node."""

    seq: int = 0
    embedder_id: str = ""
    dim: int = 0
    rows: dict[str, VecRef] = msgspec.field(default_factory=dict)
    spec: str = ""  # what makes the embedder again ("": the built-in hashed one)


def initial() -> State:
    """No embedder, no vectors."""
    return State()


FOLDS: tuple[type[Event], ...] = (EmbedderConfigured, NodesEmbedded, FileChanged, FileRemoved)
"""The events ``evolve`` folds; every other record only moves ``seq``."""


def evolve(state: State, rec: Record | FoldRecord) -> State:
    """Apply one record (consumes ``state``)."""
    match rec.event:
        case EmbedderConfigured(embedder_id=eid, dim=dim, spec=spec):
            if eid != state.embedder_id:
                state.rows = {}
            state.embedder_id, state.dim, state.spec = eid, dim, spec
        case NodesEmbedded(embedder_id=eid, blob=blob, node_ids=ids) if eid == state.embedder_id:
            for i, node_id in enumerate(ids):
                state.rows[node_id] = VecRef(blob, i)
        case FileChanged(removed=removed) | FileRemoved(removed=removed):
            for node_id in removed:
                state.rows.pop(node_id, None)
        case _:
            pass
    state.seq = rec.seq
    return state


snapshot, restore = struct_codec(State)
