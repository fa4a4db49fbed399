"""MemoryLog: the in-memory event log, the executable reference of the protocol."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Literal, overload

from ocb_events.clock import Clock, system_clock
from ocb_events.codec import encode_record
from ocb_events.errors import LogConflict, LogError
from ocb_events.frames import ZERO_CHAIN, digest, link
from ocb_events.schema import Event, FoldRecord, Record


class MemoryLog:
    """An event log held in a list; same behaviour as the segment log, no disk."""

    def __init__(self, *, clock: Clock = system_clock) -> None:
        self._clock = clock
        self._records: list[Record] = []
        self._chains: list[bytes] = [ZERO_CHAIN]

    @property
    def last_seq(self) -> int:
        return len(self._records)

    @property
    def last_ts(self) -> int:
        return self._records[-1].ts if self._records else 0

    def append(
        self, events: Sequence[Event], *, actor: str, expected_seq: int | None = None
    ) -> list[Record]:
        if expected_seq is not None and expected_seq != self.last_seq:
            raise LogConflict(expected_seq, self.last_seq)
        ts = max(self._clock(), self.last_ts)
        first = self.last_seq + 1
        recs = [
            Record(seq=first + i, ts=ts, actor=actor, event=ev)  # type: ignore[arg-type]
            for i, ev in enumerate(events)
        ]
        self._records.extend(recs)
        chain = self._chains[-1]
        for r in recs:
            chain = link(chain, r.seq, r.ts, digest(encode_record(r)))
            self._chains.append(chain)
        return recs

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
        # records are held decoded: ``light`` has nothing to save here
        end = self.last_seq if to_seq is None else max(min(to_seq, self.last_seq), 0)
        return iter(self._records[max(from_seq, 1) - 1 : end])

    def ts_of(self, seq: int) -> int:
        if not 1 <= seq <= self.last_seq:
            raise LogError(f"no record {seq} (the log holds 1..{self.last_seq})")
        return self._records[seq - 1].ts

    def chain_of(self, seq: int) -> bytes | None:
        if not 0 <= seq <= self.last_seq:
            raise LogError(f"no record {seq} (the log holds 1..{self.last_seq})")
        return self._chains[seq]

    def group(self) -> AbstractContextManager[None]:
        return nullcontext()

    def close(self) -> None:
        pass
