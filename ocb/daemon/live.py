"""A brain held open by a daemon: every projection loaded, folds taken under the gate,
and records appended only from the writer thread."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TypeVar, Unpack

from ocb.brain import Brain
from ocb.daemon.gate import Gate
from ocb.redaction import screened
from ocb.store import Store, StoreOptions
from ocb_events.errors import BrainError
from ocb_events.schema import Event, Record
from projections import PROJECTIONS, fold

__all__ = ["LiveBrain", "LiveStore"]

T = TypeVar("T")


class LiveStore(Store):
    """The store of a ``LiveBrain``: records are appended only from the writer thread
    (``writer_thread``), and each append and fold holds ``gate`` exclusively."""

    def __init__(
        self, path: str | Path, *, create: bool = False, **options: Unpack[StoreOptions]
    ) -> None:
        super().__init__(path, create=create, **options)
        self.gate = Gate()
        self.writer_thread: int | None = None
        """The only thread that may record once set (None: any, before serving)."""
        self._derive = threading.RLock()

    def record(
        self, events: Sequence[Event], actor: str, *, expected_seq: int, blobs: Sequence[bytes] = ()
    ) -> list[Record]:
        if self.writer_thread is not None and threading.get_ident() != self.writer_thread:
            raise BrainError(
                "a reading request tried to record; nothing was recorded",
                "report this: the command is served as a read but it writes",
            )
        # the net's scan (a big sync's texts take a while) runs before the gate, once:
        # readers wait for the append and the fold only
        events = screened(events, self.secrets(), self.warn)
        with self.gate.write():
            return self._append(events, actor, expected_seq=expected_seq, blobs=blobs)

    def derived(self, name: str, key: str, make: Callable[[], T]) -> T:
        with self._derive:  # one thread builds an index; the others wait for it
            return super().derived(name, key, make)

    def catch_up(self) -> int:
        """Fold what other brains appended to a shared log since this one last looked
        (``PostgresLog.refresh``); returns how many records. A segment log has no other
        writer: nothing to do."""
        refresh = getattr(self.log, "refresh", None)
        if refresh is None:
            return 0
        with self.gate.write():
            before = self.log.last_seq
            now = int(refresh())
            if now > before and self._states:
                since = min(st.seq for st in self._states.values())
                fold(self.log.read(since + 1, now), self._states)
            return now - before

    def forget_loaded(self) -> None:
        """Drop the projections and indexes held in memory (they load again on use)."""
        self._states.clear()
        self._derived.clear()


class LiveBrain(Brain):
    """A ``Brain`` that several threads share: readers under ``gate.read()``, one
    writer thread (``writer_thread``) that records; a fold holds the gate exclusively,
    so a reader never sees a projection half-updated."""

    _store_type = LiveStore
    store: LiveStore

    @property
    def gate(self) -> Gate:
        """The gate of the brain's store (``LiveStore.gate``)."""
        return self.store.gate

    @property
    def writer_thread(self) -> int | None:
        """The only thread that may record once set (None: any, before serving)."""
        return self.store.writer_thread

    @writer_thread.setter
    def writer_thread(self, ident: int | None) -> None:
        self.store.writer_thread = ident

    def warm(self) -> None:
        """Load every projection and the search index, so no request pays for it."""
        self.store.load(*sorted(PROJECTIONS))
        self.store.search_index()

    def history_held(self) -> AbstractContextManager[None]:
        """The gate, shared: a command over the history reads the log and the settings
        under it (a slice at a time), and runs its queries outside it."""
        return self.gate.read()

    def drop_unflushed(self) -> None:
        """Forget what was folded from records a failed flush took back, and fold the
        log again."""
        with self.gate.write():
            self.store.forget_loaded()
            self.warm()
