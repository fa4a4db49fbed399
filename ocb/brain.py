"""The Python API of a brain: one object per brain directory, one method per command.

Every method decides events from the projections, records them in the log (with
their cause), then folds them into the projections it holds. The CLI is a thin layer
over this module.

Example:
    >>> brain, report = Brain.init("/tmp/brain", "examples/workspace")  # doctest: +SKIP
    >>> with brain:                                                      # doctest: +SKIP
    ...     answer = brain.query("how do I roll back a bad deploy", top=5)
    ...     brain.learn(1.0, trace_id=answer.trace_id)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from ocb.engine.embed import Embedder, HashEmbedder, Matrix, builtin_embedder, unpack_matrix
from ocb.engine.search import SearchIndex
from ocb.engine.traverse import Scorer
from ocb.graph.inject import decide_inject
from ocb.graph.learn import decide_learn, steps_from_ids
from ocb.graph.query import assemble_context, decide_query
from ocb.graph.sync import changed_on_disk, plan_sync
from ocb.memory_api import MemoryCommands
from ocb.redaction import redact_input, scanner_of, warn_file
from ocb.reports import Answer, Cited, InjectReport, LearnReport, SyncReport
from ocb.settings import Indexing, Learning, S, Storage, Traversal, check_key, resolve
from ocb_events.blobs import BlobStore
from ocb_events.clock import Clock, system_clock
from ocb_events.errors import (
    BlobMissing,
    BrainError,
    BrainExists,
    BrainNotFound,
    EmbedderMismatch,
    InputError,
    LogTruncated,
    WorkspaceError,
    unknown,
)
from ocb_events.log import Durability, SegmentLog
from ocb_events.schema import (
    ConfigChanged,
    EdgesUpdated,
    Event,
    FactsRecorded,
    NodesEmbedded,
    OutcomeRecorded,
    QueryTraced,
    Record,
    RouteModelTrained,
    Step,
    tag_of,
)
from projections.graph import State as GraphState
from replay import PROJECTIONS, SnapshotStore, fold, load_states, resolve_point
from workspace_sync import FileText, Skipped, scan_workspace
from workspace_sync.secrets import Scanner

if TYPE_CHECKING:
    from ocb.graph.retract import RetractReport
    from ocb.upkeep.blobs import BlobReport
    from ocb.upkeep.forget import ForgetReport

__all__ = ["Answer", "Brain", "InjectReport", "LearnReport", "SyncReport"]

Progress = Callable[[str, int, int], None]
Warn = Callable[[str], None]
SNAPSHOT_EVERY = 500


def _scan(root: Path, *, has_files: bool) -> tuple[list[FileText], list[Skipped]]:
    files, skipped = scan_workspace(root)
    if not files and not has_files:
        reason = f" ({len(skipped)} skipped)" if skipped else ""
        raise WorkspaceError(
            f"workspace {root} holds no Markdown or text files{reason}",
            "point --workspace at the directory with your .md notes",
        )
    return files, skipped


def _check_brain_path(path: Path, *, create: bool) -> None:
    """A brain directory can be (or be made) at ``path``; ``create`` makes it.

    Raises:
        InputError: ``path``, or a directory above it, is a file; or it cannot be made.
        BrainNotFound: nothing is there and ``create`` is False.
    """
    for up in (path, *path.parents):
        if up.is_dir():
            break
        if up.exists() or up.is_symlink():
            what = "a file" if up.is_file() else "not a directory"
            where = f"is {what}" if up == path else f"is under {up}, which is {what}"
            raise InputError(f"brain path {path} {where}", "pass a directory path for --brain")
    if not create:
        raise BrainNotFound(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            f"cannot create brain directory {path}: {exc.strerror or exc}",
            "pass a directory you can write for --brain",
        ) from None


class Brain(MemoryCommands):
    """A brain directory: its log, blobs, snapshots and caches.

    Args:
        path: the brain directory.
        clock: timestamps for new records.
        writer: take the writer lock (needed to record anything).
        create: create the directory when it does not exist.
        durability: ``"batch"`` (fsync every append) or ``"none"``.
        embedder: override the built-in embedder (must match the brain's).
        warn: receives warnings (torn tail repaired, damaged snapshot ignored ...).

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
        embedder: Embedder | None = None,
        warn: Warn | None = None,
        snapshot_every: int = SNAPSHOT_EVERY,
        as_of: int | str | None = None,
    ) -> None:
        self.path = Path(path)
        self.clock = clock
        if not (self.path / "log").is_dir():
            _check_brain_path(self.path, create=create)
        self.warn: Warn = warn or (lambda _msg: None)
        if as_of is not None and writer:
            writer = False  # a view of the past records nothing
        self.log = SegmentLog(self.path / "log", clock=clock, writer=writer, durability=durability)
        r = self.log.recovery
        if r is not None and r.repaired:
            self.warn(
                f"recovered the log: dropped an unfinished batch of {r.dropped_bytes} bytes "
                f"at {r.segment} offset {r.offset} (never acknowledged; last seq {r.last_seq})"
            )
        self.blobs = BlobStore(self.path / "blobs")
        self.snapshots = SnapshotStore(self.path / "snapshots")
        self.snapshot_every = snapshot_every
        self._embedder = embedder
        self._embedder_checked = False
        self._states: dict[str, Any] = {}
        self._resnapshot: set[str] = set()
        self._index: SearchIndex | None = None
        self._index_key = ""
        self._scorer: tuple[str, Scorer] | None = None
        self.as_of: int | None = None
        try:
            if self.log.writer:
                self._sweep()
            self._check_snapshots_within_log()
            if as_of is not None:
                self.as_of = resolve_point(self.log, as_of)
        except BaseException:
            self.log.close()
            raise

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

    def history_key(self, seq: int) -> str:
        """A name for the exact history up to ``seq``: caches built from it carry it,
        so a cache of another history (a repaired or restored log) is never used."""
        chain = self.log.chain_of(seq)
        return f"{seq}-{chain.hex()[:16] if chain is not None else 'legacy'}"

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

    @classmethod
    def create(cls, path: str | Path, **kw: Any) -> Brain:
        """Open a brain for writing, creating its directory if needed."""
        return cls(path, create=True, **kw)

    def __enter__(self) -> Brain:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(snapshot=exc_type is None)

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
            discard=self.log.writer,
        )
        self._states.update(got)
        for name in missing:
            if any(m.startswith(f"snapshot {name}-") for m in damaged):
                self._resnapshot.add(name)

    @property
    def graph(self) -> GraphState:
        g: GraphState = self.state("graph")
        return g

    def record(
        self, events: Sequence[Event], actor: str, *, expected_seq: int, blobs: Sequence[bytes] = ()
    ) -> list[Record]:
        """Record decided events (after storing the blobs they name) and fold them into
        the loaded projections. ``expected_seq`` is the log's last seq the decision was
        made at; a log that moved on raises LogConflict and nothing is recorded.

        Raises:
            InputError: the brain was opened as of a past point (read-only).
        """
        if self.as_of is not None:
            raise InputError(
                f"this brain is opened as of seq {self.as_of} and records nothing",
                "drop --as-of to change the brain",
            )
        for data in blobs:
            self.blobs.put(data)
        recs = self.log.append(events, actor=actor, expected_seq=expected_seq)
        fold(recs, self._states)
        return recs

    def setting(self, section: type[S], **overrides: object) -> S:
        """One section of the settings in force (``ocb.settings.SECTIONS``): defaults,
        then recorded config, then non-None ``overrides``.

        Raises:
            InputError: an override that is unknown or invalid.
        """
        return resolve(section, self.state("config").values, **overrides)

    def secrets(self) -> Scanner:
        """The secret scanner of the settings in force (``secrets.*``)."""
        return scanner_of(self.state("config").values)

    def settings(self) -> tuple[Traversal, Learning, Indexing]:
        """The traversal, learning and indexing settings in force (see ``setting``)."""
        return self.setting(Traversal), self.setting(Learning), self.setting(Indexing)

    # ------------------------------------------------------------------ embedder and index

    def embedder(self) -> Embedder:
        """The embedder of this brain (the built-in one it was built with by default).

        Raises:
            EmbedderMismatch: an explicit embedder differs from the recorded one.
        """
        if self._embedder is not None and self._embedder_checked:
            return self._embedder
        recorded = self.state("vectors").embedder_id
        if self._embedder is None:
            self._embedder = (builtin_embedder(recorded) if recorded else None) or HashEmbedder()
        if recorded and recorded != self._embedder.id:
            raise EmbedderMismatch(recorded, self._embedder.id)
        self._embedder_checked = bool(recorded)
        return self._embedder

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

    def _cached_index(self) -> tuple[SearchIndex, Embedder] | None:
        prefix = f"search-{self.history_key(self.graph.nodes_seq)}-"
        for p in sorted((self.path / "cache").glob(prefix + "*.idx")):
            emb = self._embedder or builtin_embedder(p.name[len(prefix) : -4])
            if emb is None or p.name != f"{prefix}{emb.id}.idx":
                continue
            idx = SearchIndex.load(p)
            if idx is not None:
                # the cache was built after the recorded embedder was checked
                self._embedder, self._embedder_checked = emb, True
                return idx, emb
        return None

    def search_index(self) -> SearchIndex:
        """The search index of the current nodes (from the cache, or built and cached)."""
        key = self.history_key(self.graph.nodes_seq)
        if self._index is not None and self._index_key == key:
            return self._index
        got = self._cached_index()
        if got is None:
            emb = self.embedder()
            g = self.graph
            ids = sorted(g.nodes)
            idx = SearchIndex.build([g.nodes[i] for i in ids], self.vectors_of(ids))
            if self.as_of is None:  # a view of the past keeps its index in memory only
                self._cache_index(idx, key, emb)
        else:
            idx = got[0]
        self._index, self._index_key = idx, key
        return idx

    def _cache_index(self, idx: SearchIndex, key: str, emb: Embedder) -> None:
        cache = self.path / "cache"
        try:
            idx.save(cache / f"search-{key}-{emb.id}.idx")
            for old in cache.glob("search-*.idx"):
                if old.name != f"search-{key}-{emb.id}.idx":
                    old.unlink(missing_ok=True)
        except OSError as exc:
            self.warn(f"could not write the search cache: {exc}")

    # ------------------------------------------------------------------ commands

    @classmethod
    def init(
        cls, path: str | Path, workspace: str | Path, *, progress: Progress | None = None, **kw: Any
    ) -> tuple[Brain, SyncReport]:
        """Create (or open) a brain and sync it with ``workspace``. The workspace is
        checked first, so a bad one leaves no brain directory behind.

        Raises:
            WorkspaceError: missing, not a directory, or without any indexable file.
        """
        scanned = _scan(Path(workspace), has_files=False)
        brain = cls(path, create=True, **kw)
        try:
            regenerated = brain._restore_lost_vectors()
            report = brain.sync(workspace, progress=progress, scanned=scanned)
            return brain, msgspec.structs.replace(report, blobs_regenerated=regenerated)
        except BaseException:
            brain.close(snapshot=False)
            raise

    def _restore_lost_vectors(self) -> int:
        """Before a re-run of init syncs: regenerate lost blobs when a vector in force
        lost its blob (warning about any that cannot be), and say how many were."""
        if self.log.last_seq == 0:
            return 0
        rows = self.state("vectors").rows
        if all(self.blobs.exists(b) for b in sorted({r.blob for r in rows.values()})):
            return 0
        report = self.regenerate_blobs()
        for b in report.unrepaired:
            self.warn(f"blob {b.blob[:12]} ({b.kind}, seq {b.seq}) {b.detail}")
        return report.regenerated

    def regenerate_blobs(self) -> BlobReport:
        """Write back the lost vector blobs named by the log (up to the brain's horizon)
        by embedding again the texts they were built from (``ocb.upkeep.blobs``).
        Nothing is recorded."""

        def embedder_for(embedder_id: str) -> Embedder | None:
            if self._embedder is not None and self._embedder.id == embedder_id:
                return self._embedder
            return builtin_embedder(embedder_id)

        from ocb.upkeep.blobs import regenerate

        return regenerate(self.log, self.blobs, embedder_for, to_seq=self.horizon)

    def sync(
        self,
        workspace: str | Path,
        *,
        progress: Progress | None = None,
        scanned: tuple[list[FileText], list[Skipped]] | None = None,
        cause: str = "sync",
    ) -> SyncReport:
        """Index a workspace (first run) or bring the brain up to date with it: chunks,
        vectors and edges, and the typed facts of its Markdown. A file that changes on
        disk while the sync reads it is read again (three tries), so what is recorded
        always matches one version of every file.

        Raises:
            WorkspaceError: missing, not a directory, without any indexable file, or a
                file kept changing while it was read.
            BrainExists: the brain belongs to another workspace.
        """
        root = Path(workspace)
        self.load("config", "graph", "vectors", "memory")
        g = self.graph
        files, skipped = scanned or _scan(root, has_files=bool(g.files))
        root_s = str(root.resolve())
        if g.workspace and g.workspace != root_s:
            raise BrainExists(self.path, g.workspace, root_s)
        for sk in skipped:
            self.warn(f"skipped {sk.path}: {sk.reason}")
        for attempt in range(3):
            _, _, ix = self.settings()
            plan, problems = plan_sync(
                self.graph, self.state("vectors").embedder_id, self.state("memory"),
                self.embedder(), self.vectors_of, ix, files, skipped,
                root=root_s, cause=cause, progress=progress, secrets=self.secrets(),
            )  # fmt: skip
            moved = changed_on_disk(root, plan.events)
            if not moved:
                break
            if attempt == 2:
                raise WorkspaceError(
                    f"{moved[0]} kept changing while the sync read it; nothing was recorded",
                    "let the writer finish, then run the sync again",
                )
            files, skipped = _scan(root, has_files=True)
        for p in problems:
            self.warn(f"skipped fact at {p}")
        for path, found in plan.secrets:
            warn_file(self.warn, path, [found], "before recording (the file is unchanged)")
        if plan.events:
            self.record(plan.events, cause, expected_seq=self.log.last_seq, blobs=plan.blobs)
        self.search_index()
        self.save_snapshots(force=bool(plan.events))
        return SyncReport(
            files_indexed=plan.files_indexed,
            files_changed=plan.files_changed,
            files_removed=plan.files_removed,
            chunks_added=plan.chunks_added,
            chunks_removed=plan.chunks_removed,
            edges_created=plan.edges_created,
            events=len(plan.events),
            nodes=len(self.graph.nodes),
            edges=self.graph.edge_count(),
            skipped=[(s.path, s.reason) for s in plan.skipped],
            facts=self.state("memory").size,
            fact_files=sum(isinstance(e, FactsRecorded) for e in plan.events),
            fact_problems=[str(p) for p in problems],
            secrets=[(path, f.line, f.end_line, f.kind) for path, f in plan.secrets],
        )

    def query(
        self,
        text: str,
        *,
        top: int = 5,
        chat_id: str = "",
        record: bool = True,
        **overrides: Any,
    ) -> Answer:
        """Answer a query and record its trace.

        Args:
            text: the question.
            top: how many results to return (fired nodes first, then the next-best seeds).
            chat_id: groups traces so ``learn``/``inject`` can name the last one.
            record: False answers without recording (nothing is written).
            overrides: traversal settings for this query only (``mode="edge+sim"`` ...).

        Raises:
            InputError: an empty query or a bad setting.
        """
        self.load("config", "graph")
        trav = self.setting(Traversal, **overrides)
        text = redact_input(self.warn, self.secrets(), "query", text)
        scorer = self.route_scorer() if trav.mode == "learned" else None
        if trav.mode == "learned" and scorer is None:
            self.warn("no route model trained (ocb train-route); routing with edge+sim")
            trav = msgspec.structs.replace(trav, mode="edge+sim")
        index = self.search_index()
        seq = self.log.last_seq
        trace, hits = decide_query(
            self.graph,
            index,
            self.embedder(),
            text,
            trav,
            top=top,
            trace_id=f"t{seq + 1}",
            chat_id=chat_id,
            scorer=scorer,
        )
        record = record and self.as_of is None  # the past is read-only
        if record:
            self.record([trace], "cli", expected_seq=seq)
        return Answer(
            trace_id=trace.trace_id if record else "",
            query=trace.query,
            results=hits,
            fired=list(trace.fired),
            stop_reason=trace.stop_reason,
            context_chars=trace.context_chars,
            context=assemble_context(self.graph, trace.fired, hits),
            chat_id=chat_id,
        )

    def trace(self, trace_id: str = "", chat_id: str = "") -> QueryTraced:
        """A recorded trace, by id or as the last trace of a chat.

        Raises:
            InputError: no such trace or chat.
        """
        tr = self.state("traces")
        if chat_id and not trace_id:
            trace_id = tr.last_by_chat.get(chat_id, "")
            if not trace_id:
                raise unknown(
                    "chat id", chat_id, sorted(tr.last_by_chat), "pass --chat-id to ocb query first"
                )
        ref = tr.by_id.get(trace_id)
        if ref is None:
            raise unknown(
                "trace id",
                trace_id,
                sorted(tr.by_id)[-2000:],
                "use the trace_id printed by ocb query --json",
            )
        for rec in self.log.read(ref.seq, ref.seq):
            if isinstance(rec.event, QueryTraced):
                return rec.event
        raise unknown("trace id", trace_id, [], "the trace's record is missing; run ocb doctor")

    def learn(
        self,
        outcome: float,
        *,
        trace_id: str = "",
        chat_id: str = "",
        fired_ids: Sequence[str] = (),
        rule: str | None = None,
        source: str = "human",
        request_id: str = "",
        again: bool = False,
        **overrides: Any,
    ) -> LearnReport:
        """Score a trace (by id, the last of a chat, or an explicit node path) and
        record the weight changes the learning rule decides.

        Args:
            request_id: an idempotency key: when an outcome was already recorded under
                it, nothing is recorded and that outcome's report comes back
                (``recorded`` False), so a retry after a failure counts once.
            again: score a trace that this source already scored (refused otherwise,
                so that a blind retry never counts an outcome twice).

        Raises:
            InputError: no target given, unknown ids, a bad outcome, rule or source, or
                a trace this source already scored (without ``again``).
        """
        self.load("config", "graph", "traces")
        done = self.state("traces").requests.get(request_id) if request_id else None
        if done is not None:
            return self._learn_report(done)
        trav = self.setting(Traversal)
        learn = self.setting(Learning, rule=rule, **overrides)
        if fired_ids:
            steps: list[Step] = steps_from_ids(self.graph, list(fired_ids), trav)
            damping, tau, trace_id = trav.damping, trav.tau, ""
        elif trace_id or chat_id:
            trace = self.trace(trace_id, chat_id)
            steps, trace_id = list(trace.steps), trace.trace_id
            damping, tau = trace.params.damping, trace.params.tau
            self._check_not_scored(trace_id, source, again)
        else:
            raise InputError(
                "nothing to learn from", "pass --trace ID, --chat-id ID or --fired-ids A,B,C"
            )
        seq = self.log.last_seq
        events = decide_learn(
            steps,
            outcome,
            learn,
            source=source,
            damping=damping,
            tau=tau,
            outcome_seq=seq + 1,
            baselines=self.graph.baseline,
            trace_id=trace_id,
            chat_id=chat_id,
            fired_ids=fired_ids,
            request_id=request_id,
        )
        self.record(events, source, expected_seq=seq)
        deltas = list(events[1].deltas) if len(events) > 1 else []  # type: ignore[attr-defined]
        return LearnReport(seq + 1, trace_id, learn.rule, source, float(outcome), deltas)

    def _check_not_scored(self, trace_id: str, source: str, again: bool) -> None:
        """A trace is scored once per source (a retracted outcome does not count)."""
        seqs = self.state("traces").scored.get(trace_id, {}).get(source, [])
        live = [s for s in seqs if s not in self.graph.retracted]
        if live and not again:
            raise InputError(
                f"trace {trace_id} was already scored by {source} (outcome at seq {live[-1]})",
                "pass --again to score it once more, or give every attempt a --request-id "
                "so that a retry is recorded once",
            )

    def _learn_report(self, outcome_seq: int) -> LearnReport:
        """The report of an outcome already in the log (``recorded`` False)."""
        recs = list(self.log.read(outcome_seq, outcome_seq + 1))
        out = recs[0].event
        assert isinstance(out, OutcomeRecorded)
        upd = recs[1].event if len(recs) > 1 else None
        caused = isinstance(upd, EdgesUpdated) and upd.cause_seq == outcome_seq
        deltas = list(upd.deltas) if isinstance(upd, EdgesUpdated) and caused else []
        rule = upd.rule if isinstance(upd, EdgesUpdated) and caused else self.setting(Learning).rule
        return LearnReport(
            outcome_seq, out.trace_id, rule, out.source, out.reward, deltas, recorded=False
        )

    def inject(
        self,
        node_type: str,
        content: str,
        *,
        chat_id: str = "",
        trace_id: str = "",
        targets: Sequence[str] = (),
        all_fired: bool = False,
    ) -> InjectReport:
        """Add a CORRECTION, TEACHING or DIRECTIVE node (see ``decide_inject``): a
        correction vetoes ``targets``, or what fired in the trace of ``trace_id`` or
        ``chat_id`` that its content contradicts (``all_fired``: all of it).

        Raises:
            InputError: bad type, empty content, unknown chat, trace or target ids, a
                CORRECTION naming nothing to correct.
        """
        self.load("config", "graph", "traces")
        trace = self.trace(trace_id, chat_id) if (trace_id or chat_id) else None
        _, _, ix = self.settings()
        content = redact_input(self.warn, self.secrets(), "injected content", content)
        if trace is not None:  # a trace recorded before scanning was on
            anchor = redact_input(self.warn, self.secrets(), "anchor query", trace.query)
            trace = msgspec.structs.replace(trace, query=anchor)
        seq = self.log.last_seq
        got = decide_inject(
            self.graph,
            self.search_index(),
            self.embedder(),
            node_type,
            content,
            ix,
            trace=trace,
            chat_id=chat_id,
            targets=targets,
            all_fired=all_fired,
        )
        if not got.events:
            return InjectReport(got.node_id, False, 0, [])
        g = self.graph
        vetoed = [Cited(n, g.nodes[n].source) for n in got.vetoed]
        spared = [Cited(n, g.nodes[n].source) for n in got.spared]
        self.record(got.events, "human", expected_seq=seq, blobs=got.blobs)
        self.search_index()
        conns = got.events[0].connections  # type: ignore[attr-defined]
        inhibits = sorted(c.target for c in conns if c.weight < 0)
        return InjectReport(got.node_id, True, len(conns), inhibits, got.selection, vetoed, spared)

    def retract(
        self,
        *,
        seq: int | None = None,
        node_id: str = "",
        trace_id: str = "",
        chat_id: str = "",
        source: str = "",
        reason: str = "",
        dry_run: bool = False,
    ) -> RetractReport:
        """Take back an outcome, a teacher label or an injection, keeping both in the
        history: by its seq, by the injected node's id, or the newest outcome of a
        trace or a chat (see ``ocb.graph.retract``). ``dry_run`` decides without recording.

        Raises:
            InputError: nothing or more than one thing named, unknown ids, a record that
                cannot be retracted or already was, a view of the past.
        """
        from ocb.graph.retract import retract as retract_record

        return retract_record(
            self,
            seq=seq,
            node_id=node_id,
            trace_id=trace_id,
            chat_id=chat_id,
            source=source,
            reason=reason,
            dry_run=dry_run,
        )

    def route_scorer(self) -> Scorer | None:
        """The scorer of the route model in force, or None when none was trained."""
        from ocb.engine.route_model import load_scorer

        model = self.graph.route_model
        if model is None:
            return None
        if self._scorer is None or self._scorer[0] != model.blob:
            try:
                self._scorer = (model.blob, load_scorer(self.blobs.get(model.blob)))
            except (ValueError, BlobMissing) as exc:
                self.warn(f"route model {model.blob[:12]} unusable ({exc}); routing with edge+sim")
                return None
        return self._scorer[1]

    def set_config(self, key: str, value: object) -> Record | None:
        """Record a setting, validated completely first (nothing is recorded for an
        unknown key or a bad value); None when it already has that value.

        Raises:
            InputError: an unknown key (naming the close matches) or a bad value.
        """
        coerced = check_key(key, value)
        if self.state("config").values.get(key) == coerced:
            return None
        seq = self.log.last_seq
        event = ConfigChanged(key=key, value=coerced)
        return self.record([event], "cli", expected_seq=seq)[0]

    def events(
        self, *, since: int = 0, types: Sequence[str] = (), limit: int | None = None
    ) -> Iterator[Record]:
        """Records after seq ``since``, optionally only of the given tags, at most ``limit``.

        Raises:
            InputError: a negative ``since`` or a ``limit`` below 1.
        """
        if since < 0:
            raise InputError(f"--since must be a seq of 0 or more, got {since}", "pass --since 0")
        if limit is not None and limit < 1:
            raise InputError(
                f"--limit must be at least 1, got {limit}", "pass --limit 20, or leave it out"
            )
        return self._events(since, set(types), limit)

    def _events(self, since: int, wanted: set[str], limit: int | None) -> Iterator[Record]:
        n = 0
        for rec in self.log.read(since + 1, self.horizon):
            if wanted and tag_of(rec.event) not in wanted:
                continue
            if limit is not None and n >= limit:
                return
            n += 1
            yield rec

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
        if not self.log.writer:
            return []
        st = self.setting(Storage)
        tail = min(self.snapshot_every, st.snapshot_tail)
        every = st.checkpoint_every
        written = []
        for name in sorted(self._states):
            state = self._states[name]
            newest = self.snapshots.list(name)
            last = newest[0].seq if newest else 0
            crossed = state.seq // every > last // every
            again = name in self._resnapshot
            due = force or again or crossed or state.seq - last >= tail
            chain = self.log.chain_of(state.seq) if state.seq > 0 else None
            if chain is not None and (state.seq > last or again) and due:
                body = PROJECTIONS[name].snapshot(state)
                try:
                    self.snapshots.save(name, state.seq, body, chain=chain, checkpoint_every=every)
                except OSError as exc:
                    reason = exc.strerror or str(exc)
                    if strict:
                        raise BrainError(
                            f"could not write a snapshot of {name}: {reason}",
                            "free disk space and retry; snapshots are derived data, the log is "
                            "intact",
                        ) from exc
                    self.warn(
                        f"could not write a snapshot of {name} ({reason}); the records are "
                        "safe in the log and a later command writes it"
                    )
                    break
                written.append((name, state.seq))
        return written

    def forget(self, **kw: Any) -> ForgetReport:
        """Erase content from the whole history (see ``ocb.upkeep.forget.forget``).

        Raises:
            InputError: nothing or several things named, or content no record holds.
        """
        from ocb.upkeep.forget import forget as forget_content

        return forget_content(self, **kw)

    def forget_derived(self, renamed: Mapping[str, str]) -> None:
        """Drop what was derived from the history before a redaction: the states and
        indexes held in memory, every snapshot and cache file, and the vector blobs
        ``renamed`` replaced that no record names any longer."""
        self._states.clear()
        self._resnapshot.clear()
        self._index, self._index_key, self._scorer = None, "", None
        self._fact_index = None
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

    def close(self, *, snapshot: bool = True) -> None:
        """Write due snapshots (unless ``snapshot`` is False: a failed command leaves
        them for the next one), commit and release the log."""
        try:
            if snapshot:
                self.save_snapshots()
        finally:
            self.log.close()
