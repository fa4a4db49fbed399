"""The daemon's watcher: a thread that turns each batch of workspace changes into one
sync on the writer thread, after a reconcile at start (files changed while no daemon
ran). The reconcile runs once the watcher listens, so a file saved while it runs is
synced by the first batch, never missed."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from pathlib import Path
from typing import Any

from ocb.daemon.live import LiveBrain
from ocb.reports import SyncReport
from ocb_events.errors import OcbError
from workspace_sync.watch import watch_batches

__all__ = ["Follower"]

Submit = Callable[[Callable[[], Any]], Future[Any]]


def describe(report: SyncReport, seq: int) -> str:
    """One line for a sync: what changed and the seq it left the brain at."""
    parts = [
        f"{n} {what}"
        for n, what in (
            (report.files_changed, "changed"),
            (report.files_indexed, "added"),
            (report.files_removed, "removed"),
            (report.files_moved, "moved"),
            (report.chunks_revised, "chunk(s) revised"),
        )
        if n
    ]
    return f"synced: {', '.join(parts) or 'no change'} (seq {seq})"


class Follower:
    """Keeps a served brain in step with its workspace (nothing to do without one)."""

    def __init__(
        self,
        brain: LiveBrain,
        workspace: Path | None,
        log: Callable[[str], None],
        *,
        debounce_ms: int,
    ) -> None:
        self.brain = brain
        self.workspace = workspace
        self.log = log
        self.debounce_ms = debounce_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pending: set[str] = set()
        self.syncs = 0
        self.last_sync: dict[str, Any] | None = None

    def start(self, submit: Submit) -> None:
        """Watch on a thread of its own, reconciling first; returns once the reconcile
        is recorded (raising its error, the watcher then stopped)."""
        if self.workspace is None:
            return
        ready = threading.Event()
        failed: list[BaseException] = []

        def run() -> None:
            try:
                self.run(submit, ready=ready.set)
            except BaseException as exc:  # handed to start's caller
                failed.append(exc)
            finally:
                ready.set()

        self._thread = threading.Thread(target=run, name="ocb-watch", daemon=True)
        self._thread.start()
        ready.wait()
        if failed:
            self._thread.join()
            raise failed[0]

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def stop_soon(self) -> None:
        """Make ``run`` return after the batch at hand (safe from a signal handler)."""
        self._stop.set()

    def info(self) -> dict[str, Any]:
        """The watcher's part of ``status``."""
        return {
            "workspace": str(self.workspace) if self.workspace else None,
            "watched_files": len(self.brain.graph.files),
            "syncs": self.syncs,
            "last_sync": self.last_sync,
        }

    def run(self, submit: Submit, ready: Callable[[], None] | None = None) -> None:
        """Once the watcher listens, reconcile with a full sync (what changed while
        nothing watched, the first index too) and call ``ready``; then sync each batch
        of changes through ``submit`` until stopped."""
        if self.workspace is None:
            return
        ws = self.workspace

        def reconcile() -> None:
            self._done(submit(partial(self.brain.sync, ws)).result(), files=-1)
            if ready is not None:
                ready()

        for batch in watch_batches(
            ws,
            ignore=(self.brain.path,),
            quiet_ms=self.debounce_ms,
            stop=self._stop,
            ready=reconcile,
        ):
            paths = frozenset(self._pending | batch)
            try:
                report = submit(partial(self.brain.sync, ws, paths=paths)).result()
            except OcbError as exc:
                self._pending = set(paths)
                self.log(f"warning: sync of {len(paths)} file(s) failed: {exc.message}; retried")
                continue
            except Exception as exc:  # keep watching: the next change syncs again
                self._pending = set(paths)
                self.log(f"error: sync of {len(paths)} file(s) failed: {type(exc).__name__}: {exc}")
                continue
            self._pending.clear()
            self._done(report, files=len(paths))

    def _done(self, report: SyncReport, *, files: int) -> None:
        self.syncs += 1
        seq = self.brain.log.last_seq
        self.last_sync = {
            "seq": seq,
            "files": files,
            "at_unix": round(time.time(), 3),
            "events": report.events,
        }
        if report.events or files < 0:
            self.log(describe(report, seq))
