"""A brain's storage: its log, blobs, snapshots and caches, and the projections folded
from the log. Every command reads and records through a ``Store``; ``ocb.brain.Brain``
holds one (``brain.store``) and has one method per command.

The log is any ``EventLog``: the segment log in ``<path>/log`` by default, the shared
log on PostgreSQL the brain records (``ocb.shared_log``), or one given as ``log=``
(e.g. ``ocb_events.memory.MemoryLog``, a brain that lives in memory; its blobs,
snapshots and caches still go under ``path``).

Example:
    >>> with Store("/tmp/brain", writer=False) as store:  # doctest: +SKIP
    ...     len(store.graph.nodes)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Self, TypedDict, TypeVar, Unpack, cast

import numpy as np

from ocb.engine.embed import Embedder, HashEmbedder, Matrix, builtin_embedder, unpack_matrix
from ocb.engine.embedders import embedder_from_spec, embedder_spec
from ocb.engine.search import SearchIndex
from ocb.paths import check_brain_path
from ocb.redaction import scanner_of, screened
from ocb.settings import Actor, Indexing, Learning, S, Storage, Traversal, resolve
from ocb.shared_log import blob_store, location, open_shared
from ocb_events.clock import Clock, system_clock
from ocb_events.codec import only_types
from ocb_events.errors import (
    BrainError,
    EmbedderMismatch,
    InputError,
    LogConflict,
    LogTruncated,
)
from ocb_events.log import Durability, Recovery, SegmentLog
from ocb_events.protocol import EncodedLog, EventLog
from ocb_events.schema import Event, NodesEmbedded, Record, RouteModelTrained, tag_of
from projections import PROJECTIONS, fold
from projections.graph import State as GraphState
from replay import SnapshotStore, load_states, resolve_point
from workspace_sync.secrets import Scanner

__all__ = ["SNAPSHOT_EVERY", "Decision", "Store", "StoreOptions", "Warn"]

Warn = Callable[[str], None]
SNAPSHOT_EVERY = 500
T = TypeVar("T")


class Decision(NamedTuple):
    """What a decide hands ``Store.transact``: events (none: nothing) and their blobs."""

    events: Sequence[Event]
    blobs: Sequence[bytes] = ()


class StoreOptions(TypedDict, total=False):
    """How to open a store (the keyword arguments of ``Store``, but ``create``)."""

    clock: Clock
    writer: bool
    durability: Durability
    embedder: Embedder | str | None
    warn: Warn | None
    snapshot_every: int
    as_of: int | str | None
    log: EventLog | None


class Store:
    """A brain directory: its log, blobs, snapshots and caches.

    Args:
        path: the brain directory.
        clock: timestamps for new records.
        writer: take the writer lock (needed to record anything).
        create: create the directory when it does not exist.
        durability: ``"batch"`` (fsync every append) or ``"none"``.
        embedder: override the built-in embedder (must match the brain's).
        warn: receives warnings (torn tail repaired, damaged snapshot ignored ...).
        snapshot_every: records folded at most before a snapshot is due.
        as_of: open a read-only view of the brain at this seq or ISO time.
        log: the log to use instead of the segment log in ``path/log`` (e.g. a
            ``MemoryLog``); ``path`` still holds blobs, snapshots and caches.

    Raises:
        BrainNotFound: no brain at ``path`` and ``create`` is False.
        BrainLocked: another process holds the writer lock.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Clock = system_clock,
        writer: bool = True,
        create: bool = False,
        durability: Durability = "batch",
        embedder: Embedder | str | None = None,
        warn: Warn | None = None,
        snapshot_every: int = SNAPSHOT_EVERY,
        as_of: int | str | None = None,
        log: EventLog | None = None,
    ) -> None:
        self.path = Path(path)
        self.clock = clock
        if log is not None:  # the directory holds only what is derived, and blobs
            check_brain_path(self.path, create=True)
        elif not (self.path / "log").is_dir() and location(self.path) is None:
            check_brain_path(self.path, create=create)
        self.warn: Warn = warn or (lambda _msg: None)
        if as_of is not None and writer:
            writer = False  # a view of the past records nothing
        self.recovery: Recovery | None = None
        """What opening the segment log repaired or found torn (None: nothing)."""
        self.log: EventLog = log if log is not None else self._open_log(writer, durability)
        self.writer = writer
        self.blobs = blob_store(self.log, self.path / "blobs")
        self.snapshots = SnapshotStore(self.path / "snapshots")
        self.snapshot_every = snapshot_every
        if isinstance(embedder, str):  # a spec: hash, minilm, http:...
            embedder = embedder_from_spec(embedder, cache_dir=self.path / "cache")
        self._embedder = embedder
        self._embedder_checked = False
        self._states: dict[str, Any] = {}
        self._resnapshot: set[str] = set()
        self._derived: dict[str, tuple[str, object]] = {}
        self._scanner: tuple[tuple[tuple[str, object], ...], Scanner] | None = None
        self.as_of: int | None = None
        try:
            if self.writer:
                self._sweep()
            self._check_snapshots_within_log()
            if as_of is not None:
                self.as_of = resolve_point(self.log, as_of)
        except BaseException:
            self.log.close()
            raise

    def _open_log(self, writer: bool, durability: Durability) -> EventLog:
        shared = open_shared(self.path, clock=self.clock, durability=durability, create=writer)
        if shared is not None:  # on PostgreSQL (``ocb.shared_log``)
            return shared
        log = SegmentLog(self.path / "log", clock=self.clock, writer=writer, durability=durability)
        r = self.recovery = log.recovery
        if r is not None and r.repaired:
            self.warn(
                f"recovered the log: dropped an unfinished batch of {r.dropped_bytes} bytes "
                f"at {r.segment} offset {r.offset} (never acknowledged; last seq {r.last_seq})"
            )
        return log

    def _sweep(self) -> None:
        """Remove temp files that a failed or killed write left in the brain."""
        self.snapshots.sweep()
        for pattern in ("blobs/*/*.tmp", "cache/*.tmp"):
            for p in self.path.glob(pattern):
                p.unlink(missing_ok=True)

    def _check_snapshots_within_log(self) -> None:
        """Snapshots are only ever written of acknowledged records: one past the log's
        end means the log lost records.

        Raises:
            LogTruncated: naming the lost seqs.
        """
        held = self.snapshots.newest_seq()
        if held > self.log.last_seq:
            raise LogTruncated(self.log.last_seq, held, "its snapshots cover it")

    @classmethod
    def create(cls, path: str | Path, **options: Unpack[StoreOptions]) -> Self:
        """Open a brain for writing, creating its directory if needed."""
        return cls(path, create=True, **options)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(snapshot=exc_type is None)

    # ------------------------------------------------------------------ time and history

    def history_key(self, seq: int) -> str:
        """A name for the exact history up to ``seq``: caches built from it carry it,
        so a cache of another history (a repaired or restored log) is never used."""
        chain = self.log.chain_of(seq)
        return f"{seq}-{chain.hex()[:16] if chain is not None else 'legacy'}"

    @property
    def workspace(self) -> str:
        """The workspace of this brain: the one its log records, or for a brain on a
        shared log the one of this machine's copy (``ocb.shared_log``)."""
        loc = location(self.path) if not isinstance(self.log, SegmentLog) else None
        return (loc.workspace if loc is not None else "") or self.graph.workspace

    @property
    def horizon(self) -> int:
        """The last seq this brain sees: ``as_of``, or the end of the log."""
        return self.as_of if self.as_of is not None else self.log.last_seq

    def now(self) -> int:
        """The brain's time in ns: its clock, or for a view of the past the time of the
        record it is opened at."""
        if self.as_of is not None:
            return self.log.ts_of(self.as_of) if self.as_of > 0 else 0
        return self.clock()

    def events(
        self, *, since: int = 0, types: Sequence[str] = (), limit: int | None = None
    ) -> Iterator[Record]:
        """Records after seq ``since``, optionally only of the given tags, at most ``limit``.

        Raises:
            InputError: a negative ``since`` or a ``limit`` below 1.
        """
        if since < 0:
            raise InputError(
                f"`since` must be a seq of 0 or more, got {since}", "pass `since=0`", param="since"
            )
        if limit is not None and limit < 1:
            raise InputError(
                f"`limit` must be at least 1, got {limit}",
                "pass `limit=20`, or leave it out",
                param="limit",
            )
        return self._events(since, set(types), limit)

    def _events(self, since: int, wanted: set[str], limit: int | None) -> Iterator[Record]:
        n = 0
        records: Iterator[Record | None]
        if wanted and isinstance(self.log, EncodedLog):  # the others' types are only peeked
            records = self.log.read_decoded(since + 1, self.horizon, only_types(wanted))
        else:
            records = self.log.read(since + 1, self.horizon)
        for rec in records:
            if rec is None or (wanted and tag_of(rec.event) not in wanted):
                continue
            if limit is not None and n >= limit:
                return
            n += 1
            yield rec

    # ------------------------------------------------------------------ state

    def state(self, name: str) -> Any:
        """A projection at the end of the log (loaded from snapshot + tail once)."""
        if name not in self._states:
            self.load(name)
        return self._states[name]

    def load(self, *names: str) -> None:
        """Load the named projections that are not loaded yet, in one pass over the
        log's tail. A damaged or outdated snapshot is reported and written again."""
        missing = sorted(set(names) - set(self._states))
        if not missing:
            return
        damaged: list[str] = []

        def warn(msg: str) -> None:
            damaged.append(msg)
            self.warn(msg)

        got = load_states(
            self.log,
            self.snapshots,
            missing,
            to_seq=self.horizon,
            warn=warn,
            discard=self.writer,
        )
        self._states.update(got)
        for name in missing:
            if any(m.startswith(f"snapshot {name}-") for m in damaged):
                self._resnapshot.add(name)

    @property
    def graph(self) -> GraphState:
        """The graph projection (see ``state``)."""
        g: GraphState = self.state("graph")
        return g

    def transact(
        self, actor: Actor, decide: Callable[[int], Decision | Sequence[Event]], attempts: int = 3
    ) -> list[Record]:
        """Decide and record as one step: ``decide(seq)`` runs on the brain at the log's
        last seq, and what it decides is recorded as ``actor`` expecting that seq. When
        another writer appended in between, its records are folded in and ``decide``
        runs again (``attempts`` times in all). Returns the records ([]: no events).

        Raises:
            LogConflict: the log moved on at every attempt (nothing recorded).
            InputError: the brain was opened as of a past point (read-only).
        """
        attempt = 1
        while True:
            seq = self.log.last_seq
            got = decide(seq)
            events, blobs = got if isinstance(got, Decision) else (got, ())
            if not events:
                return []
            try:
                return self.record(events, actor, expected_seq=seq, blobs=blobs)
            except LogConflict:
                if attempt >= attempts:
                    raise
                attempt += 1
                if self._states:  # catch up with the other writer's records
                    since = min(st.seq for st in self._states.values())
                    fold(self.log.read(since + 1), self._states)

    def record(
        self, events: Sequence[Event], actor: str, *, expected_seq: int, blobs: Sequence[bytes] = ()
    ) -> list[Record]:
        """Record decided events (after storing the blobs they name) and fold them into
        the loaded projections. ``expected_seq`` is the log's last seq the decision was
        made at; a log that moved on raises LogConflict and nothing is recorded (a
        command records through ``transact``, which decides again then; a replay
        records each record's own actor). A field that still holds a secret is redacted
        first, with a warning (``ocb.redaction.screened``).

        Raises:
            InputError: the brain was opened as of a past point (read-only).
        """
        if self.as_of is not None:
            raise InputError(
                f"this brain is opened as of seq {self.as_of} and records nothing",
                "drop `as_of` to change the brain",
                param="as_of",
            )
        events = screened(events, self.secrets(), self.warn)
        return self._append(events, actor, expected_seq=expected_seq, blobs=blobs)

    def _append(
        self, events: Sequence[Event], actor: str, *, expected_seq: int, blobs: Sequence[bytes]
    ) -> list[Record]:
        """``record`` after the net: store the blobs, append, fold."""
        for data in blobs:
            self.blobs.put(data)
        recs = self.log.append(events, actor=actor, expected_seq=expected_seq)
        fold(recs, self._states)
        return recs

    # ------------------------------------------------------------------ settings

    def setting(self, section: type[S], **overrides: object) -> S:
        """One section of the settings in force (``ocb.settings.SECTIONS``): defaults,
        then recorded config, then non-None ``overrides``.

        Raises:
            InputError: an override that is unknown or invalid.
        """
        return resolve(section, self.state("config").values, **overrides)

    def secrets(self) -> Scanner:
        """The secret scanner of the settings in force (``secrets.*``), made again only
        when they change (every record and every query asks for it)."""
        values = self.state("config").values
        key = tuple(sorted((k, v) for k, v in values.items() if k.startswith("secrets.")))
        held = self._scanner
        if held is None or held[0] != key:
            held = self._scanner = (key, scanner_of(values))
        return held[1]

    def settings(self) -> tuple[Traversal, Learning, Indexing]:
        """The traversal, learning and indexing settings in force (see ``setting``)."""
        return self.setting(Traversal), self.setting(Learning), self.setting(Indexing)

    # ------------------------------------------------------------------ embedder and vectors

    def embedder(self) -> Embedder:
        """The embedder of this brain (the built-in one it was built with by default).

        Raises:
            EmbedderMismatch: an explicit embedder differs from the recorded one.
        """
        if self._embedder is not None and self._embedder_checked:
            return self._embedder
        vec = self.state("vectors")
        recorded = vec.embedder_id
        if self._embedder is None:
            self._embedder = self._recorded_embedder(recorded, vec.spec)
        if recorded and recorded != self._embedder.id:
            spec = embedder_spec(self._embedder) or "hash"
            fix = f"ocb reembed --embedder {spec} --brain {self.path}"
            raise EmbedderMismatch(recorded, self._embedder.id, fix)
        self._embedder_checked = bool(recorded)
        return self._embedder

    def use_embedder(self, embedder: Embedder) -> None:
        """Switch to ``embedder`` once the log records it (``ocb reembed``): what was
        derived from the old vectors goes."""
        self._embedder, self._embedder_checked = embedder, True
        self._derived.clear()

    def _recorded_embedder(self, recorded: str, spec: str) -> Embedder:
        """The embedder the log names: the built-in one of its id, else the one its spec
        makes (the hashed one for a new brain).

        Raises:
            EmbedderUnavailable: the spec's embedder cannot run here.
        """
        builtin = builtin_embedder(recorded) if recorded else None
        if builtin is not None:
            return builtin
        if spec:
            return embedder_from_spec(spec, cache_dir=self.path / "cache")
        return HashEmbedder()

    def embedder_for(self, embedder_id: str) -> Embedder | None:
        """The embedder named ``embedder_id``: the one this brain was opened with when
        it has that id, else the built-in one of that id (None: not at hand)."""
        if self._embedder is not None and self._embedder.id == embedder_id:
            return self._embedder
        if embedder_id and embedder_id == self.state("vectors").embedder_id:
            return self.embedder()
        return builtin_embedder(embedder_id)

    def vectors_of(self, ids: list[str]) -> Matrix:
        """Vectors of ``ids`` from the blob store (zero rows where none is recorded)."""
        vec = self.state("vectors")
        emb = self.embedder()
        out = np.zeros((len(ids), emb.dim), dtype=np.float32)
        by_blob: dict[str, list[tuple[int, int]]] = {}
        for i, nid in enumerate(ids):
            ref = vec.rows.get(nid)
            if ref is not None:
                by_blob.setdefault(ref.blob, []).append((i, ref.row))
        for blob in sorted(by_blob):
            m = unpack_matrix(self.blobs.get(blob))
            rows = by_blob[blob]
            out[[i for i, _ in rows]] = m[[r for _, r in rows]]
        return out

    # ------------------------------------------------------------------ derived data

    def derived(self, name: str, key: str, make: Callable[[], T]) -> T:
        """A value derived from the history (an index, a loaded model), kept in memory
        while ``key`` names the same history: ``make()`` builds it otherwise. A value
        ``make`` fails to build is not kept."""
        held = self._derived.get(name)
        if held is not None and held[0] == key:
            return cast(T, held[1])
        value = make()
        self._derived[name] = (key, value)
        return value

    def cached_index(
        self,
        kind: str,
        key: str,
        build: Callable[[Embedder], SearchIndex],
        *,
        valid: Callable[[SearchIndex], bool] | None = None,
    ) -> SearchIndex:
        """A search index of the history ``key`` names, from its cache file
        ``cache/<kind>-<key>-<embedder>.idx`` (so a new process does not embed again),
        or built with ``build(embedder)`` and cached (older ``<kind>-*`` files go). A
        cache file that is damaged or that ``valid`` refuses is built again; a view of
        the past keeps what it builds in memory only."""
        got = self._load_index(kind, key, valid)
        if got is not None:
            return got
        emb = self.embedder()
        idx = build(emb)
        if self.as_of is None:
            self._save_index(kind, key, emb, idx)
        return idx

    def _load_index(
        self, kind: str, key: str, valid: Callable[[SearchIndex], bool] | None
    ) -> SearchIndex | None:
        prefix = f"{kind}-{key}-"
        for p in sorted((self.path / "cache").glob(prefix + "*.idx")):
            emb = self._embedder or self.embedder_for(p.name[len(prefix) : -4])
            if emb is None or p.name != f"{prefix}{emb.id}.idx":
                continue
            idx = SearchIndex.load(p)
            if idx is not None and (valid is None or valid(idx)):
                # the cache was built after the recorded embedder was checked
                self._embedder, self._embedder_checked = emb, True
                return idx
        return None

    def _save_index(self, kind: str, key: str, emb: Embedder, idx: SearchIndex) -> None:
        cache = self.path / "cache"
        name = f"{kind}-{key}-{emb.id}.idx"
        try:
            idx.save(cache / name)
            for old in cache.glob(f"{kind}-*.idx"):
                if old.name != name:
                    old.unlink(missing_ok=True)
        except OSError as exc:
            self.warn(f"could not write the {kind} cache: {exc}")

    def search_index(self) -> SearchIndex:
        """The search index of the current nodes (from the cache, or built and cached)."""
        key = self.history_key(self.graph.nodes_seq)
        return self.derived("search", key, lambda: self.cached_index("search", key, self._nodes))

    def _nodes(self, _emb: Embedder) -> SearchIndex:
        g = self.graph
        ids = sorted(g.nodes)
        return SearchIndex.build([g.nodes[i] for i in ids], self.vectors_of(ids))

    def forget_derived(self, renamed: Mapping[str, str]) -> None:
        """Drop what was derived from the history before a redaction: the states and
        indexes held in memory, every snapshot and cache file, and the vector blobs
        ``renamed`` replaced that no record names any longer."""
        self._states.clear()
        self._resnapshot.clear()
        self._derived.clear()
        for p in self.snapshots.directory.glob("*.snap"):
            p.unlink(missing_ok=True)
        cache = self.path / "cache"
        for p in sorted(cache.iterdir()) if cache.is_dir() else []:
            if p.is_file() and not p.name.endswith(".lock"):
                p.unlink(missing_ok=True)
        if renamed:
            named = {
                rec.event.blob
                for rec in self.log.read(light=True)
                if isinstance(rec.event, (NodesEmbedded, RouteModelTrained))
            }
            for old in sorted(set(renamed) - named):
                self.blobs.path(old).unlink(missing_ok=True)

    # ------------------------------------------------------------------ lifecycle

    def save_snapshots(self, *, force: bool = False, strict: bool = False) -> list[tuple[str, int]]:
        """Snapshot the loaded projections that are due (``force``: all of them): when
        ``storage.snapshot_tail`` records piled up since their last snapshot, or a
        ``storage.checkpoint_every`` boundary was crossed. Returns (name, seq) written.

        Snapshots are derived data written after the records they fold are safe in the
        log: a failure to write one is a warning (the next command writes it), unless
        ``strict`` (writing them is the command).

        Raises:
            BrainError: ``strict`` and a snapshot could not be written.
        """
        if not self.writer:
            return []
        st = self.setting(Storage)
        tail = min(self.snapshot_every, st.snapshot_tail)
        written = []
        for name in sorted(self._states):
            state = self._states[name]
            newest = self.snapshots.list(name)
            last = newest[0].seq if newest else 0
            crossed = state.seq // st.checkpoint_every > last // st.checkpoint_every
            again = name in self._resnapshot
            due = force or again or crossed or state.seq - last >= tail
            chain = self.log.chain_of(state.seq) if state.seq > 0 else None
            if chain is not None and (state.seq > last or again) and due:
                if not self._save_snapshot(name, state, chain, st.checkpoint_every, strict):
                    break
                written.append((name, state.seq))
        return written

    def _save_snapshot(self, name: str, state: Any, chain: bytes, every: int, strict: bool) -> bool:
        """Write one snapshot; False when the disk refused it (a warning)."""
        body = PROJECTIONS[name].snapshot(state)
        try:
            self.snapshots.save(name, state.seq, body, chain=chain, checkpoint_every=every)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            if strict:
                raise BrainError(
                    f"could not write a snapshot of {name}: {reason}",
                    "free disk space and retry; snapshots are derived data, the log is intact",
                ) from exc
            self.warn(
                f"could not write a snapshot of {name} ({reason}); the records are "
                "safe in the log and a later command writes it"
            )
            return False
        return True

    def close(self, *, snapshot: bool = True) -> None:
        """Write due snapshots (unless ``snapshot`` is False: a failed command leaves
        them for the next one), commit and release the log."""
        try:
            if snapshot:
                self.save_snapshots()
        finally:
            self.log.close()
