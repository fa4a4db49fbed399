"""The single writer of a served brain: one thread runs every command that records,
in the order they arrived, and commits them in groups.

The thread takes the next job, then every job queued behind it (up to ``max_group``),
and runs them inside one log group: each decides against the brain as the jobs before
it left it and appends with ``expected_seq`` (no flush), and the group ends with one
flush for all of them. Only then does any job of the group get its answer, so nothing
is acknowledged before it is durable. A decision the log refuses as stale
(``LogConflict``) is decided again, up to three times, never appended blindly.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from ocb.daemon.gate import Gate
from ocb_events.errors import LogConflict

__all__ = ["Writer"]

ATTEMPTS = 3


class _Job:
    __slots__ = ("exclusive", "fn", "future")

    def __init__(self, fn: Callable[[], Any], exclusive: bool) -> None:
        self.fn = fn
        self.exclusive = exclusive
        self.future: Future[Any] = Future()


class Writer:
    """The writer thread.

    Args:
        group: opens one group commit of the brain's log (``brain.log.group``).
        gate: held exclusively for the whole of an ``exclusive`` job.
        on_lost: called when a group's flush failed: its records are gone from the log
            and the brain must drop what it folded of them.
        max_group: the most jobs committed together.
    """

    def __init__(
        self,
        group: Callable[[], AbstractContextManager[None]],
        gate: Gate,
        on_lost: Callable[[BaseException], None],
        *,
        max_group: int = 64,
    ) -> None:
        self._group = group
        self._gate = gate
        self._on_lost = on_lost
        self._max = max_group
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="ocb-writer", daemon=True)
        self.groups = 0
        """Groups committed (each one flush)."""
        self.jobs = 0
        """Jobs run."""

    @property
    def ident(self) -> int | None:
        """The writer thread's id (None before ``start``)."""
        return self._thread.ident

    def start(self) -> None:
        self._thread.start()

    def submit(self, fn: Callable[[], Any], *, exclusive: bool = False) -> Future[Any]:
        """Queue ``fn`` to run on the writer thread; its future is set once the group
        it ran in is durable. Cancel the future to drop a job that has not started."""
        job = _Job(fn, exclusive)
        self._queue.put(job)
        return job.future

    def stop(self) -> None:
        """Run every job queued so far, then end the thread."""
        self._queue.put(None)
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch, last = self._drain(first)
            self._commit(batch)
            if last:
                return

    def _drain(self, first: _Job) -> tuple[list[_Job], bool]:
        batch = [first]
        while len(batch) < self._max:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return batch, False
            if job is None:
                return batch, True
            batch.append(job)
        return batch, False

    def _commit(self, batch: list[_Job]) -> None:
        done: list[tuple[_Job, bool, Any]] = []
        try:
            with self._group():
                for job in batch:
                    if job.future.set_running_or_notify_cancel():
                        done.append((job, *self._run(job)))
        except BaseException as exc:  # the flush failed: none of the group is durable
            self._on_lost(exc)
            for job, _, _ in done:
                job.future.set_exception(exc)
            return
        self.groups += 1
        self.jobs += len(done)
        for job, ok, value in done:
            if ok:
                job.future.set_result(value)
            else:
                job.future.set_exception(value)

    def _run(self, job: _Job) -> tuple[bool, Any]:
        failure: Exception = LogConflict(0, 0)
        for _ in range(ATTEMPTS):
            try:
                with self._gate.write() if job.exclusive else nullcontext():
                    return True, job.fn()
            except LogConflict as exc:  # decided against a log that moved on: again
                failure = exc
            except Exception as exc:  # the job's own failure: its caller gets it
                return False, exc
        return False, failure
