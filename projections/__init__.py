"""Pure folds of the event log. Each module exports State, initial, evolve, snapshot
and restore, and declares beside ``evolve`` the events it folds (``FOLDS``); this
package holds the registry of them all (``PROJECTIONS``), the event tags each one folds
(``ROUTES``, built from those declarations) and ``fold``, which hands every record to
the projections that use it."""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any

from ocb_events.schema import Event, FoldRecord, Record
from projections import config, graph, kg, memory, routes, traces, vectors
from projections._weights import WeightRun, fold_weights

__all__ = [
    "PROJECTIONS",
    "ROUTES",
    "WeightRun",
    "config",
    "fold",
    "fold_weights",
    "graph",
    "kg",
    "memory",
    "routes",
    "traces",
    "vectors",
]

PROJECTIONS: dict[str, ModuleType] = {
    "config": config,
    "graph": graph,
    "kg": kg,
    "memory": memory,
    "routes": routes,
    "traces": traces,
    "vectors": vectors,
}
"""Every projection by name; each module exports State, initial, FOLDS, evolve, snapshot
and restore."""


def _tags(folds: Iterable[type[Event]]) -> frozenset[str]:
    return frozenset(str(kind.__struct_config__.tag) for kind in folds)


ROUTES: dict[str, frozenset[str]] = {name: _tags(m.FOLDS) for name, m in PROJECTIONS.items()}
"""The event tags each projection folds, from the ``FOLDS`` it declares beside its
``evolve``. Every other record only moves its ``seq`` (the ignored-payload property
test holds each projection to this table), so a fold hands a record only to the
projections that use it."""


def fold(records: Iterable[Record | FoldRecord], states: dict[str, Any]) -> dict[str, Any]:
    """Fold ``records`` into ``states`` (consumed), skipping records a state already holds."""
    names = sorted(states)
    evolves = [PROJECTIONS[n].evolve for n in names]
    current = [states[n] for n in names]
    starts = [st.seq for st in current]
    routes: dict[type, list[int]] = {}
    last = 0
    for rec in records:
        kind = type(rec.event)
        route = routes.get(kind)
        if route is None:
            tag = kind.__struct_config__.tag
            route = routes[kind] = [i for i, n in enumerate(names) if tag in ROUTES[n]]
        seq = last = rec.seq
        for i in route:
            if seq > starts[i]:
                current[i] = evolves[i](current[i], rec)
    for n, st in zip(names, current, strict=True):
        if st.seq < last:
            st.seq = last
        states[n] = st
    return states
