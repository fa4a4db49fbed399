"""A brain held open by a daemon: every projection loaded, folds taken under the gate,
and records appended only from the writer thread."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar, Unpack

from ocb.brain import Brain
from ocb.daemon.gate import Gate
from ocb.store import StoreOptions
from ocb_events.errors import BrainError, WorkspaceError
from ocb_events.schema import Event, Record
from replay import PROJECTIONS
from workspace_sync.reads import Excerpt, read_lines

__all__ = ["LiveBrain"]

T = TypeVar("T")


class LiveBrain(Brain):
    """A ``Brain`` that several threads share: readers under ``gate.read()``, one
    writer thread (``writer_thread``) that records; a fold holds the gate exclusively,
    so a reader never sees a projection half-updated."""

    def __init__(
        self, path: str | Path, *, create: bool = False, **options: Unpack[StoreOptions]
    ) -> None:
        super().__init__(path, create=create, **options)
        self.gate = Gate()
        self.writer_thread: int | None = None
        """The only thread that may record once set (None: any, before serving)."""
        self._derive = threading.RLock()

    def warm(self) -> None:
        """Load every projection and the search index, so no request pays for it."""
        self.load(*sorted(PROJECTIONS))
        self.search_index()

    def record(
        self, events: Sequence[Event], actor: str, *, expected_seq: int, blobs: Sequence[bytes] = ()
    ) -> list[Record]:
        if self.writer_thread is not None and threading.get_ident() != self.writer_thread:
            raise BrainError(
                "a reading request tried to record; nothing was recorded",
                "report this: the command is served as a read but it writes",
            )
        with self.gate.write():
            return super().record(events, actor, expected_seq=expected_seq, blobs=blobs)

    def derived(self, name: str, key: str, make: Callable[[], T]) -> T:
        with self._derive:  # one thread builds an index; the others wait for it
            return super().derived(name, key, make)

    def read_lines(self, rel: str, start: int = 1, lines: int | None = None) -> Excerpt:
        """Lines of the file ``rel`` of the brain's workspace (``workspace_sync.reads``:
        at most 2,000 from ``start``), secrets redacted as the brain redacts them, for a
        client such as the MCP server.

        Raises:
            WorkspaceError: the brain has no workspace, or ``rel`` is empty, absolute,
                has a ``..`` part, resolves outside the workspace or is not a file.
            InputError: ``start`` or ``lines`` is below 1.
        """
        root = self.graph.workspace
        if not root:
            raise WorkspaceError("this brain has no workspace to read", "ocb init --workspace DIR")
        scanner = self.secrets()
        return read_lines(Path(root), rel, start, lines, redact=lambda t: scanner.redact(t).text)

    def drop_unflushed(self) -> None:
        """Forget what was folded from records a failed flush took back, and fold the
        log again."""
        with self.gate.write():
            self.forget_loaded()
            self.warm()

    def forget_loaded(self) -> None:
        """Drop the projections and indexes held in memory (they load again on use)."""
        self._states.clear()
        self._derived.clear()
