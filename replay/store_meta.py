"""Plain data of the analytics store: what it says of itself (its schema version, the
seq it holds everything up to, and the exact history, the log's hash chain there, it
was folded from), what a query returns, and what it reads of a log. No DuckDB here:
``replay.analytics`` reads and writes them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal, Protocol, overload

import msgspec

from ocb_events.schema import FoldRecord, Record


class History(Protocol):
    """What the analytics store reads of a log (every ``EventLog`` has it)."""

    @property
    def last_seq(self) -> int: ...

    @overload
    def read(
        self, from_seq: int = ..., to_seq: int | None = ..., *, light: Literal[False] = ...
    ) -> Iterator[Record]: ...

    @overload
    def read(
        self, from_seq: int = ..., to_seq: int | None = ..., *, light: Literal[True]
    ) -> Iterator[Record | FoldRecord]: ...

    def read(
        self, from_seq: int = 1, to_seq: int | None = None, *, light: bool = False
    ) -> Iterator[Record | FoldRecord]: ...

    def chain_of(self, seq: int) -> bytes | None: ...


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
    same_keys: bool = True
    """Whether this DuckDB hashes edges as the one that keyed the store's changes."""


def chain_at(log: History, seq: int) -> str:
    if not 0 <= seq <= log.last_seq:
        return ""
    chain = log.chain_of(seq)
    return chain.hex() if chain is not None else ""


def same_history(meta: Meta, log: History) -> bool:
    """Whether the store was folded from this very history (a store ahead of this
    process's view of the log cannot be checked here, and is trusted: see ``_holds``)."""
    return meta.last_seq > log.last_seq or meta.chain == chain_at(log, meta.last_seq)


def first_ts(log: History) -> int:
    return next((r.ts for r in log.read(1, 1, light=True)), 0)
