"""Plain data of the analytics store: what it says of itself (its schema version, the
seq it holds everything up to, and the exact history, the log's hash chain there, it
was folded from) and what a query returns. No DuckDB here: ``replay.analytics`` reads
and writes them."""

from __future__ import annotations

from typing import Any

import msgspec

from ocb_events.protocol import EventLog


class QueryResult(msgspec.Struct, frozen=True):
    """The rows of a query with their column names and DuckDB types."""

    columns: list[str]
    types: list[str]
    rows: list[tuple[Any, ...]]


class Meta(msgspec.Struct, frozen=True):
    """The store's row in ``store.meta``."""

    version: int
    last_seq: int
    graph_seq: int
    first_ts: int
    chain: str = ""
    """The log's hash chain at ``last_seq``: the exact history the store holds."""


def chain_at(log: EventLog, seq: int) -> str:
    if not 0 <= seq <= log.last_seq:
        return ""
    chain = log.chain_of(seq)
    return chain.hex() if chain is not None else ""


def same_history(meta: Meta, log: EventLog) -> bool:
    """Whether the store was folded from this very history (a store ahead of this
    process's view of the log cannot be checked here, and is trusted: see ``_holds``)."""
    return meta.last_seq > log.last_seq or meta.chain == chain_at(log, meta.last_seq)


def first_ts(log: EventLog) -> int:
    return next((r.ts for r in log.read(1, 1, light=True)), 0)
