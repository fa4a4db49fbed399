"""Pure folds of the event log. Each module exports State, initial, evolve, snapshot
and restore; this package holds the registry of them all (``PROJECTIONS``), the event
tags each one folds (``ROUTES``) and ``fold``, which hands every record to the
projections that use it."""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any

from ocb_events.schema import FoldRecord, Record
from projections import config, graph, kg, memory, routes, traces, vectors

__all__ = [
    "PROJECTIONS",
    "ROUTES",
    "config",
    "fold",
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
"""Every projection by name; each module exports State, initial, evolve, snapshot, restore."""


ROUTES: dict[str, frozenset[str]] = {
    "config": frozenset({"config_changed"}),
    "graph": frozenset(
        {
            "authority_set",
            "edge_relevance_set",
            "edges_created",
            "edges_removed",
            "edges_updated",
            "file_changed",
            "file_indexed",
            "file_moved",
            "file_removed",
            "maintenance_ran",
            "node_injected",
            "node_split",
            "nodes_embedded",
            "nodes_merged",
            "retracted",
            "route_model_trained",
            "workspace_attached",
        }
    ),
    "kg": frozenset({"kg_fact_set"}),
    "memory": frozenset(
        {"facts_recorded", "outcome_recorded", "recall_traced", "reflect_ran", "retracted"}
    ),
    "routes": frozenset({"route_updated"}),
    "traces": frozenset({"outcome_recorded", "query_traced"}),
    "vectors": frozenset({"embedder_configured", "file_changed", "file_removed", "nodes_embedded"}),
}
"""The event tags each projection folds. Every other record only moves its ``seq``
(the ignored-payload property test holds each projection to this table), so a fold
hands a record only to the projections that use it."""


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
