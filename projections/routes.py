"""The routes projection: query-anchored routes, one per question that outcomes scored
under the ``route`` learning rule (see ``ocb.engine.routes``).

A route is keyed by its question's terms (sorted, distinct, stemmed: ``key``) and holds a
credit per node: what the outcomes of that question said about the node, each tied to
the text the node had (``hashes``) so a node whose text changed since is re-checked,
not trusted. The fold only adds the recorded deltas: every decision was made when the
``RouteUpdated`` was recorded.

NOTE: ``State`` is mutable; ``evolve`` consumes its input.
"""

from __future__ import annotations

import msgspec

from ocb_events.schema import Event, FoldRecord, Record, RouteUpdated
from projections._codec import struct_codec


class Route(msgspec.Struct, kw_only=True):
    """One question's route: its key and first query text, the seqs that created and
    last changed it, its count of failed answers, and each node's credit and the
    hash of the text that credit is about."""

    key: str
    query: str
    created_seq: int
    seq: int
    misses: int = 0
    credits: dict[str, float] = msgspec.field(default_factory=dict)
    hashes: dict[str, str] = msgspec.field(default_factory=dict)


class State(msgspec.Struct, kw_only=True):
    """Routes by id, the route of each key, and the routes of each term (in creation
    order)."""

    seq: int = 0
    routes: dict[str, Route] = msgspec.field(default_factory=dict)
    by_key: dict[str, str] = msgspec.field(default_factory=dict)
    by_term: dict[str, list[str]] = msgspec.field(default_factory=dict)


def initial() -> State:
    """No routes."""
    return State()


def _update(state: State, ev: RouteUpdated, seq: int) -> None:
    route = state.routes.get(ev.route_id)
    if route is None:
        if not ev.key:
            return  # a reversal of a route that is gone: nothing to reverse
        route = state.routes[ev.route_id] = Route(
            key=ev.key, query=ev.query, created_seq=seq, seq=seq
        )
        state.by_key.setdefault(ev.key, ev.route_id)
        for term in ev.key.split():
            state.by_term.setdefault(term, []).append(ev.route_id)
    route.seq = seq
    route.misses += ev.misses
    for c in ev.credits:
        value = route.credits.get(c.node, 0.0) + c.delta
        if abs(value) < 1e-12:
            route.credits.pop(c.node, None)
            route.hashes.pop(c.node, None)
        else:
            route.credits[c.node] = value
            route.hashes[c.node] = c.text_hash


FOLDS: tuple[type[Event], ...] = (RouteUpdated,)
"""The events ``evolve`` folds; every other record only moves ``seq``."""


def evolve(state: State, rec: Record | FoldRecord) -> State:
    """Apply one record (consumes ``state``)."""
    if isinstance(rec.event, RouteUpdated):
        _update(state, rec.event, rec.seq)
    state.seq = rec.seq
    return state


snapshot, restore = struct_codec(State)
