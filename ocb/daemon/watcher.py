"""The daemon's watcher: a thread that turns each batch of workspace changes into one
sync on the writer thread, after a reconcile at start (files changed while no daemon
ran). The reconcile runs once the watcher listens, so a file saved while it runs is
synced by the first batch, never missed.

A big file's new chunks are embedded here, on the watcher's thread, before the sync
is handed to the writer (``embed_ahead``): embedding is most of a big file's sync, and
the writer runs every recorded query, so they would otherwise wait behind it. The sync
is still decided and recorded on the writer, against the brain as it is then, and
embeds whatever was not embedded ahead."""

from __future__ import annotations

import stat
import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import Future
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ocb.daemon.live import LiveBrain
from ocb.engine.embed import chunk_input
from ocb.graph.sync import EMBED_BATCH, sync
from ocb.reports import SyncReport
from ocb.settings import Indexing
from ocb_events.errors import OcbError
from workspace_sync import chunk_text, scan_paths, text_hash
from workspace_sync.watch import watch_batches

__all__ = ["AHEAD_MIN_CHARS", "Follower", "embed_ahead"]

Submit = Callable[[Callable[[], Any]], Future[Any]]
Vectors = dict[str, npt.NDArray[np.float32]]

AHEAD_MIN_CHARS = 20_000
"""A changed file at least this long has its new chunks embedded off the writer."""
ACTOR = "watcher"
"""The actor of what the watcher's syncs record."""


def embed_ahead(brain: LiveBrain, root: Path, paths: Collection[str]) -> Vectors:
    """The vectors of the new chunks of the big files among ``paths`` (by
    ``chunk_input``), embedded on the calling thread. The brain's settings and the
    file's chunks are read under the gate, briefly; a file that changes meanwhile
    only costs vectors the sync does not take. Small files are not even read here (a
    UTF-8 file of fewer bytes than ``AHEAD_MIN_CHARS`` has fewer characters)."""
    paths = [p for p in sorted(paths) if _size(root / p) >= AHEAD_MIN_CHARS]
    if not paths:
        return {}
    with brain.gate.read():
        ix, scanner, emb = brain.setting(Indexing), brain.store.secrets(), brain.store.embedder()
        g = brain.graph
        had = {
            p: frozenset(g.nodes[i].text_hash for i in g.files[p].chunks)
            for p in sorted(paths)
            if p in g.files
        }
    files, _, _ = scan_paths(root, paths, (), max_bytes=ix.max_file_bytes)
    texts: dict[str, None] = {}  # ordered, without repeats
    for f in files:
        if len(f.text) < AHEAD_MIN_CHARS:
            continue
        pieces = chunk_text(
            scanner.redact(f.text).text,
            markdown=f.markdown,
            target_chars=ix.chunk_chars,
            max_chars=ix.max_chunk_chars,
        )
        old = had.get(f.path, frozenset())
        texts.update(
            (chunk_input(p.heading, p.text), None) for p in pieces if text_hash(p.text) not in old
        )
    todo = list(texts)
    out: Vectors = {}
    for start in range(0, len(todo), EMBED_BATCH):
        batch = todo[start : start + EMBED_BATCH]
        out.update(zip(batch, emb.embed(batch), strict=True))
    return out


def _size(path: Path) -> int:
    """The size of the regular file at ``path`` (0 for anything else, or none)."""
    try:
        st = path.stat()
    except OSError:
        return 0
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


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
            self._done(submit(partial(self.brain.sync, ws, actor=ACTOR)).result(), files=-1)
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
                ahead = self._ahead(ws, paths)
                job = partial(sync, self.brain.store, ws, paths=paths, embedded=ahead, actor=ACTOR)
                report = submit(job).result()
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

    def _ahead(self, ws: Path, paths: frozenset[str]) -> Vectors:
        """``embed_ahead``, or nothing when it fails (the sync embeds, and reports)."""
        try:
            return embed_ahead(self.brain, ws, paths)
        except Exception:  # the sync on the writer meets the same failure and says it
            return {}

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
