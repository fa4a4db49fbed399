"""Pure folds of the event log. Each module exports State, initial, evolve, snapshot
and restore."""

from projections import config, graph, kg, memory, traces, vectors

__all__ = ["config", "graph", "kg", "memory", "traces", "vectors"]
