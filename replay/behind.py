"""A flush of the analytics store committed on a thread of its own while the next batch
is folded (``replay.analytics``): DuckDB writes one batch while Python decodes the next;
and how many records a batch holds (``batch_size``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["CHUNK", "MIN_CHUNK", "Behind", "batch_size"]

CHUNK = 50_000
"""At most this many records folded per commit (each commit holds a consistent seq)."""
MIN_CHUNK = 25_000
"""At least this many records per commit, but for the last (``batch_size``)."""


def batch_size(total: int) -> int:
    """Records per commit in a catch-up of ``total`` records: a quarter of them, so
    that DuckDB writes each batch while the next one is folded (the last batch's
    commit overlaps nothing), within ``MIN_CHUNK`` (below it, each commit's own cost
    outweighs the overlap: every other one checkpoints) and ``CHUNK`` (the rows a
    batch holds in memory, and the last commit)."""
    return min(CHUNK, max(MIN_CHUNK, -(-total // 4)))


class Behind:
    """One flush committed on a thread of its own while the next batch is folded: the
    store's connection is used by that thread alone until ``wait`` (which raises what
    it raised)."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def start(self, commit: Callable[[], None]) -> None:
        def run() -> None:
            try:
                commit()
            except BaseException as exc:  # raised by ``wait``, in the folding thread
                self._error = exc

        self._thread = threading.Thread(target=run, name="ocb-analytics-commit")
        self._thread.start()

    def drain(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def wait(self) -> None:
        self.drain()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
