"""The protocol every event log implements: the segment log on disk and the
in-memory reference log."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol, overload, runtime_checkable

from ocb_events.schema import Event, FoldRecord, Record


class EventLog(Protocol):
    """An append-only sequence of records with gap-free seqs starting at 1."""

    @property
    def last_seq(self) -> int:
        """The seq of the newest record, 0 when the log is empty."""
        ...

    @property
    def last_ts(self) -> int:
        """The ts of the newest record, 0 when the log is empty."""
        ...

    def append(
        self, events: Sequence[Event], *, actor: str, expected_seq: int | None = None
    ) -> list[Record]:
        """Append ``events`` atomically and return their records.

        Raises:
            LogConflict: ``expected_seq`` is given and is not ``last_seq``.
        """
        ...

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
    ) -> Iterator[Record | FoldRecord]:
        """Records with ``from_seq <= seq <= to_seq`` (to the end by default), in order.
        ``light`` allows query traces to come back as their head only (for folds)."""
        ...

    def ts_of(self, seq: int) -> int:
        """The ts of record ``seq``.

        Raises:
            LogError: ``seq`` is outside 1..last_seq.
        """
        ...

    def chain_of(self, seq: int) -> bytes | None:
        """The hash chain of the history up to record ``seq``: 16 bytes that name the
        exact sequence of records 1..seq (all zeros for 0); None when the record is of
        a format without a chain.

        Raises:
            LogError: ``seq`` is outside 0..last_seq.
        """
        ...

    def group(self) -> AbstractContextManager[None]:
        """Group commit: appends inside the block share one durability barrier."""
        ...

    def close(self) -> None:
        """Release files and locks."""
        ...


Decode = Callable[..., Any]
"""Turns one record's stored bytes into what a reader wants:
``decode(payload, *, segment, offset)`` (``segment`` and ``offset`` name the record in
errors)."""


@runtime_checkable
class EncodedLog(Protocol):
    """A log that stores its records encoded (the segment log, PostgreSQL): a reader
    that needs only part of each record decodes it its own way (``replay.folding``)."""

    def read_decoded(self, from_seq: int, to_seq: int, decode: Decode) -> Iterator[Any]:
        """``decode`` of each record with ``from_seq <= seq <= to_seq`` (clipped to the
        log), in order.

        Raises:
            LogCorrupt: a record in range fails its checksum or is missing.
        """
        ...
