"""The Python API of a brain: one object per brain directory, one method per command.

``Brain`` is a ``Store`` with one typed method per command, each delegating to the
feature that decides and records it; the CLI calls nothing else. Rarely used commands'
modules are imported when they run, so that a query starts fast.

Example:
    >>> brain, report = Brain.init("/tmp/brain", "examples/workspace")  # doctest: +SKIP
    >>> with brain:                                                      # doctest: +SKIP
    ...     answer = brain.query("how do I roll back a bad deploy", top=5)
    ...     brain.learn(1.0, trace_id=answer.trace_id)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

import msgspec

from ocb.engine.traverse import Scorer
from ocb.graph.inject import inject
from ocb.graph.learn import learn
from ocb.graph.query import query, route_scorer, trace_of
from ocb.graph.sync import Progress, Scanned, scan, sync
from ocb.reports import Answer, InjectReport, LearnReport, ReembedReport, SyncReport
from ocb.settings import Sql
from ocb.store import Store, StoreOptions, Warn
from ocb_events.schema import QueryTraced, Record

if TYPE_CHECKING:
    from ocb.checks.repair import BrainRepair
    from ocb.checks.verify import Head, Verification
    from ocb.graph.retract import RetractReport
    from ocb.graph.route import TrainReport
    from ocb.graph.teach import TeachReport
    from ocb.graph.warm import WarmReport
    from ocb.memory.kg import KgHistory, KgSetReport, KgView
    from ocb.memory.recall_service import RecallAnswer
    from ocb.memory.reflect import Judge, ReflectReport, Summarize
    from ocb.memory.retain import RetainReport
    from ocb.memory.unretain import FactRetraction
    from ocb.scratch import Progress as Replaying
    from ocb.upkeep.blobs import BlobReport
    from ocb.upkeep.forget import ForgetReport
    from ocb.upkeep.health import Health
    from ocb.upkeep.maintain import AnchorReport, MaintenanceReport
    from ocb.whatif import DiffReport, Relearning, WhatIfReport
    from replay.analytics import AnalyticsStore
    from replay.audit import EdgeAudit, NodeAudit
    from replay.history import CatchUp
    from replay.isolation import Running
    from replay.report import HistoryReport
    from replay.store_meta import QueryResult
    from replay.verify import Check, Progress as Counted
    from workspace_sync.reads import Excerpt

__all__ = ["Answer", "Brain", "InjectReport", "LearnReport", "SyncReport"]

Estimate = Callable[[str, str, list[str]], float]
_QUERIES = threading.Lock()  # makes each brain's ``Running`` once


class Brain(Store):
    """A brain directory with one method per command (see ``Store`` for how to open
    one: ``Brain(path)``, ``Brain.create(path)``, or ``Brain.init(path, workspace)``).
    The checks that must work on a log that cannot be opened take the brain's path:
    ``Brain.doctor_at``, ``Brain.repair`` and ``Brain.verify_at``.
    """

    # ------------------------------------------------------------------ the workspace

    @classmethod
    def init(
        cls,
        path: str | Path,
        workspace: str | Path,
        *,
        progress: Progress | None = None,
        **options: Unpack[StoreOptions],
    ) -> tuple[Brain, SyncReport]:
        """Create (or open) a brain and sync it with ``workspace``, first writing back
        any vector blob it lost. The workspace is checked first, so a bad one leaves no
        brain directory behind.

        Raises:
            WorkspaceError: missing, not a directory, or without any indexable file.
        """
        from ocb.upkeep.blobs import restore_lost_vectors  # on use: cold queries skip it

        scanned = scan(Path(workspace), has_files=False)
        brain = cls(path, create=True, **options)
        try:
            regenerated = restore_lost_vectors(brain)
            report = sync(brain, workspace, progress=progress, scanned=scanned)
            return brain, msgspec.structs.replace(report, blobs_regenerated=regenerated)
        except BaseException:
            brain.close(snapshot=False)
            raise

    def sync(
        self,
        workspace: str | Path,
        *,
        progress: Progress | None = None,
        scanned: Scanned | None = None,
        cause: str = "sync",
        paths: Collection[str] | None = None,
        actor: str = "",
    ) -> SyncReport:
        """Index a workspace (first run) or bring the brain up to date with it: chunks,
        vectors, edges and the typed facts of its Markdown (with ``paths``, only the
        files at those relative paths). A file that changes while the sync reads it is
        read again (three tries): what is recorded matches one version of every file.

        Raises:
            WorkspaceError: missing, not a directory, without any indexable file, or a
                file kept changing while it was read.
            BrainExists: the brain belongs to another workspace.
        """
        return sync(
            self, workspace, progress=progress, scanned=scanned, cause=cause, paths=paths,
            actor=actor,
        )  # fmt: skip

    # ------------------------------------------------------------------ the graph

    def query(
        self,
        text: str,
        *,
        top: int = 5,
        chat_id: str = "",
        record: bool = True,
        mode: str | None = None,
        actor: str = "cli",
        **traversal: float | str | None,
    ) -> Answer:
        """Answer a query and record its trace.

        Args:
            text: the question.
            top: how many results to return (fired nodes first, then the next-best seeds).
            chat_id: groups traces so ``learn``/``inject`` can name the last one.
            record: False answers without recording (nothing is written).
            mode: the route mode for this query (``edge``, ``edge+sim``, ``learned``).
            actor: who asks (``cli``, ``mcp``, ``plugin``): the actor of its record.
            traversal: other ``traversal.*`` settings for this query only
                (``max_hops=2`` ...).

        Raises:
            InputError: an empty query or a bad setting.
        """
        return query(
            self, text, top=top, chat_id=chat_id, record=record, mode=mode, actor=actor,
            **traversal,
        )  # fmt: skip

    def trace(self, trace_id: str = "", chat_id: str = "") -> QueryTraced:
        """A recorded trace, by id or as the last trace of a chat (InputError: none)."""
        return trace_of(self, trace_id, chat_id)

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
        used: Sequence[str] = (),
        cited: Sequence[str] = (),
        actor: str = "cli",
        **learning: float | str | None,
    ) -> LearnReport:
        """Score a trace (by id, the last of a chat, or an explicit node path) and
        record what the learning rule decides: the change of the question's route
        (``route``, the default) or of the edges walked (``pg``, ``heuristic``; an
        explicit path always teaches the edges, with ``pg`` under ``route``).

        Args:
            outcome: the reward, in [-1, 1].
            rule: ``route`` (the default), ``pg`` or ``heuristic``.
            used: the fired nodes the answer used or cited (a positive outcome of a
                trace): the route keeps exactly those.
            cited: the answer's citations (``path#L12-L20``, ``path#L12``, ``path``):
                the fired chunks they name are used too (``ocb.engine.citations``); when
                none is named (and no ``used``), the outcome is recorded as 0 and the
                report lists them as ``unmatched``.
            actor: who asks (``cli``, ``mcp``, ``plugin``): the actor of the records.
            source: the reward source: human, self, harvester or teacher.
            request_id: an idempotency key: when an outcome was already recorded under
                it, nothing is recorded and that outcome's report comes back
                (``recorded`` False), so a retry after a failure counts once.
            again: score a trace that this source already scored (refused otherwise,
                so that a blind retry never counts an outcome twice).
            learning: other ``learning.*`` settings for this outcome (``eta=0.05`` ...).

        Raises:
            InputError: no target given, unknown ids, a bad outcome, rule or source, a
                trace this source already scored (without ``again``), or ``used`` ids
                that did not fire in the trace (all named; nothing is recorded).
        """
        return learn(
            self,
            outcome,
            trace_id=trace_id,
            chat_id=chat_id,
            fired_ids=fired_ids,
            rule=rule,
            source=source,
            request_id=request_id,
            again=again,
            used=used,
            cited=cited,
            actor=actor,
            **learning,
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
        actor: str = "cli",
    ) -> InjectReport:
        """Add a CORRECTION, TEACHING or DIRECTIVE node (see ``decide_inject``): a
        correction vetoes ``targets``, or what fired in the trace of ``trace_id`` or
        ``chat_id`` that its content contradicts (``all_fired``: all of it).

        Raises:
            InputError: bad type, empty content, unknown chat, trace or target ids, a
                CORRECTION naming nothing to correct.
        """
        return inject(
            self,
            node_type,
            content,
            chat_id=chat_id,
            trace_id=trace_id,
            targets=targets,
            all_fired=all_fired,
            actor=actor,
        )

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
        """Take back an outcome, a teacher label or an injection (``ocb.graph.retract.retract``)."""
        from ocb.graph.retract import retract

        return retract(
            self,
            seq=seq,
            node_id=node_id,
            trace_id=trace_id,
            chat_id=chat_id,
            source=source,
            reason=reason,
            dry_run=dry_run,
        )

    def retract_fact(
        self, fact_id: str, *, dry_run: bool = False, actor: str = "cli"
    ) -> FactRetraction:
        """Take a fact (a claim an assistant made, or any other) out of the workspace:
        its bullet is removed and the fact retired (``ocb.memory.unretain``).

        Raises:
            InputError: an unknown fact; WorkspaceError: the file changed meanwhile.
        """
        from ocb.memory.unretain import retract_fact

        return retract_fact(self, fact_id, dry_run=dry_run, actor=actor)

    def teach(
        self, labels: Sequence[str] | Path, *, apply: bool = False, relevance: bool = False
    ) -> TeachReport:
        """Turn teacher labels (JSON lines, or a file of them; see ``ocb.graph.teach``)
        into the updates they cause, recorded only with ``apply``.

        Raises:
            InputError: an unreadable file or malformed lines, by number; nothing is
                recorded.
        """
        from ocb.graph.teach import read_labels, teach

        lines = read_labels(labels) if isinstance(labels, Path) else labels
        return teach(self, lines, apply=apply, relevance=relevance)

    def warm_sessions(
        self,
        paths: Sequence[str | Path],
        *,
        corrections: bool = False,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> WarmReport:
        """Warm the brain from an agent's past transcripts (session JSONL files, or
        directories of them): each answered turn is recorded as its query and, when the
        transcript says what the answer used or that it was wrong, an outcome of the
        ``harvester`` source; with ``corrections`` a correcting message becomes a
        CORRECTION. Turns already warmed are skipped (``ocb.graph.warm``); ``dry_run``
        decides and counts without recording.

        Raises:
            InputError: a missing path, a directory without ``*.jsonl``, or a file that
                is not JSONL (nothing is recorded).
        """
        from ocb.graph.warm import warm

        files = [Path(p) for p in paths]
        return warm(self, files, corrections=corrections, dry_run=dry_run, progress=progress)

    def train_route(self, *, min_examples: int = 20) -> TrainReport:
        """Train the route model of the ``learned`` route mode and record it.

        Raises:
            InputError: fewer than ``min_examples`` labelled decisions.
        """
        from ocb.graph.route import train

        return train(self, min_examples=min_examples)

    def route_scorer(self) -> Scorer | None:
        """The scorer of the route model in force, or None when none was trained."""
        return route_scorer(self)

    # ------------------------------------------------------------------ typed memory

    def retain(
        self,
        content: str,
        *,
        kind: str = "W",
        entities: list[str] | None = None,
        salience: float | None = None,
        confidence: float | None = None,
        estimate: Estimate | None = None,
        speaker: str = "user",
        session: str = "",
        turn: int = 0,
        actor: str = "cli",
    ) -> RetainReport:
        """Write a fact into today's daily log and record it (see ``ocb.memory.retain``);
        ``speaker`` (user, assistant or tool), ``session`` and ``turn`` say who said it:
        what an assistant said is a claim (``ocb.engine.claims``).

        Raises:
            InputError: an unknown kind or speaker, a salience or confidence outside
                [0, 1].
            WorkspaceError: the brain has no workspace.
        """
        from ocb.memory.retain import retain

        return retain(
            self,
            content,
            kind=kind,
            entities=entities,
            salience=salience,
            confidence=confidence,
            estimate=estimate,
            speaker=speaker,
            session=session,
            turn=turn,
            actor=actor,
        )

    def recall(
        self,
        query: str = "",
        *,
        k: int = 10,
        since: str | None = None,
        between: tuple[str, str] | None = None,
        kinds: list[str] | None = None,
        entities: list[str] | None = None,
        min_salience: float = 0.0,
        depth: int = 0,
        max_chars: int | None = None,
        record: bool = True,
        actor: str = "cli",
    ) -> RecallAnswer:
        """Recall facts and record the trace (see ``ocb.memory.recall_service.recall``).

        Raises:
            InputError: a bad date, kind, fraction, or an entity no fact mentions.
        """
        from ocb.memory.recall_service import recall

        return recall(
            self,
            query,
            k=k,
            since=since,
            between=between,
            kinds=kinds,
            entities=entities,
            min_salience=min_salience,
            depth=depth,
            max_chars=max_chars,
            record=record,
            actor=actor,
        )

    def reflect(
        self,
        since: str = "7d",
        *,
        summarize: Summarize | None = None,
        judge: Judge | None = None,
        actor: str = "cli",
    ) -> ReflectReport:
        """Rewrite entity summaries and move opinion confidence under ``bank/`` (see
        ``ocb.memory.reflect``).

        Raises:
            InputError: a bad ``since`` or a brain opened as of a past point.
            WorkspaceError: no workspace, or a bank page changed while reflect ran.
        """
        from ocb.memory.reflect import reflect

        return reflect(self, since, summarize=summarize, judge=judge, actor=actor)

    def kg_set(
        self, subject: str, predicate: str, value: str, source: str = "", *, actor: str = "cli"
    ) -> KgSetReport:
        """State a current fact (see ``ocb.memory.kg.kg_set``)."""
        from ocb.memory.kg import kg_set

        return kg_set(self, subject, predicate, value, source, actor=actor)

    def kg_get(self, subject: str, predicate: str | None = None) -> KgView:
        """The current facts of a subject, with staleness and conflicts (``kg_get``)."""
        from ocb.memory.kg import kg_get

        return kg_get(self, subject, predicate)

    def kg_history(self, subject: str, predicate: str | None = None) -> KgHistory:
        """Every statement of a subject, oldest first (``ocb.memory.kg.kg_history``)."""
        from ocb.memory.kg import kg_history

        return kg_history(self, subject, predicate)

    # ------------------------------------------------------------------ upkeep

    def set_config(self, key: str, value: object, *, actor: str = "cli") -> Record | None:
        """Record a setting, validated completely first (nothing is recorded for an
        unknown key or a bad value); None when it already has that value.

        Raises:
            InputError: an unknown key (naming the close matches) or a bad value.
        """
        from ocb.upkeep.config import set_config

        return set_config(self, key, value, actor=actor)

    def maintain(
        self,
        ops: Sequence[str] | str = (),
        *,
        dry_run: bool = False,
        top: int = 10,
        actor: str = "cli",
        **maintenance: float | None,
    ) -> MaintenanceReport:
        """Run maintenance operations (all by default), each recorded as one atomic
        batch and reporting its ``top`` changes; ``maintenance.*`` settings override
        for this run (``half_life_days=14`` ...; see ``ocb.upkeep.maintain``).

        Raises:
            InputError: an unknown operation or a setting out of range.
        """
        from ocb.upkeep.maintain import maintain

        return maintain(
            self, ops, dry_run=dry_run, clock=self.clock, top=top, actor=actor, **maintenance
        )

    def anchor(
        self, authority: str, *, node_ids: Sequence[str] = (), path: str = ""
    ) -> AnchorReport:
        """Set the authority of nodes, or of every chunk of a file.

        Raises:
            InputError: an unknown authority, node id or file; nothing named.
        """
        from ocb.upkeep.maintain import anchor

        return anchor(self, authority, node_ids=node_ids, path=path)

    def health(
        self, *, window: int = 100, apply: bool = False, actor: str = "cli"
    ) -> tuple[Health, list[Record]]:
        """Tier shares and query costs over the last ``window`` traces, with proposed
        setting fixes (recorded with ``apply``; see ``ocb.upkeep.health``).

        Raises:
            InputError: a window below 1.
        """
        from ocb.upkeep.health import check

        return check(self, window=window, apply=apply, actor=actor)

    def regenerate_blobs(self) -> BlobReport:
        """Write back the lost vector blobs the log names, embedding their texts again."""
        from ocb.upkeep.blobs import regenerate_blobs

        return regenerate_blobs(self)

    def reembed(self, spec: str, *, progress: Progress | None = None) -> ReembedReport:
        """Switch every vector to the embedder ``spec`` names, in one append."""
        from ocb.upkeep.reembed import reembed

        return reembed(self, spec, progress)

    def forget(
        self,
        *,
        seq: int | None = None,
        path: str | None = None,
        fact: str | None = None,
        text: str | None = None,
        reason: str = "",
        dry_run: bool = False,
    ) -> ForgetReport:
        """Erase content from the whole history (see ``ocb.upkeep.forget``).

        Raises:
            InputError: nothing or several things named, or content no record holds.
        """
        from ocb.upkeep.forget import forget

        return forget(
            self, seq=seq, path=path, fact=fact, text=text, reason=reason, dry_run=dry_run
        )

    def write_snapshots(self) -> list[tuple[str, int]]:
        """Write a snapshot of every projection now: ``(projection, seq)`` of each."""
        from replay import PROJECTIONS

        self.load(*PROJECTIONS)
        return self.save_snapshots(force=True, strict=True)

    # ------------------------------------------------------------------ checks

    @staticmethod
    def doctor_at(
        path: str | Path, *, repair: bool = False, as_of: int | str | None = None
    ) -> tuple[list[Check], BlobReport | None]:
        """Every health check of the brain at ``path``, whose log may be damaged (its
        check then fails), and the blob repair run first with ``repair`` (else None).
        Raises InputError for ``repair`` with ``as_of``, BrainNotFound without a brain."""
        from ocb.checks.brain import doctor

        return doctor(path, repair=repair, as_of=as_of)

    @staticmethod
    def repair(path: str | Path, *, warn: Warn | None = None) -> BrainRepair:
        """Repair a damaged log, which cannot be opened: intact records are kept, lost
        ones become tombstones keeping their seq (``ocb.checks.repair``). Raises
        BrainNotFound without a brain at ``path``, BrainLocked when another writes it."""
        from ocb.checks.repair import repair_brain

        return repair_brain(Path(path), warn=warn)

    @staticmethod
    def install_command(extra: str) -> str:
        """The shell command that installs the optional ``extra`` for the ocb running
        here (``ocb.engine.extras``), for the hint of an error that needs it."""
        from ocb.engine.extras import install_command

        return install_command(extra)

    @staticmethod
    def parse_heads(texts: list[str], *, repair: bool = False) -> list[Head]:
        """The heads ``--head`` names, each ``SEQ:HEX`` (``ocb.checks.verify``);
        InputError for one of another shape, or for heads with ``repair``."""
        from ocb.checks.verify import parse_heads

        return parse_heads(texts, repair=repair)

    @staticmethod
    def verify_at(
        path: str | Path,
        *,
        heads: list[Head] | None = None,
        warn: Warn | None = None,
        progress: Counted | None = None,
    ) -> Verification:
        """The log's framing, checksums, seqs and chain and the head of the chain, each
        of ``heads`` kept earlier against it, then (when the log holds) every snapshot
        against a rebuild (``ocb.checks.verify``). Raises BrainNotFound: no brain."""
        from ocb.checks.verify import verify_brain

        return verify_brain(path, heads=heads, warn=warn, progress=progress)

    def check_projections(self) -> list[Check]:
        """Every projection as loaded (newest snapshot + tail) against a full rebuild."""
        from replay.verify import verify_live

        return verify_live(self.log, self.snapshots)

    # ------------------------------------------------------------------ the history

    _queries: Running | None = None

    @staticmethod
    def check_sql(statement: str) -> None:
        """Refuse SQL that ``sql`` refuses, before any brain is opened (InputError,
        AnalyticsError)."""
        from replay.statements import check_query

        check_query(statement)

    def sql(self, statement: str, **catch_up: Unpack[CatchUp]) -> QueryResult:
        """Run one reading statement over the whole history (``replay.analytics``), in
        a worker process within the ``sql.*`` limits; AnalyticsError (or InputError)
        when it is not a single read, fails, or goes over a limit."""
        with self._history(**catch_up) as store:
            return store.query(statement)

    def report(self, *, top: int = 10, **catch_up: Unpack[CatchUp]) -> HistoryReport:
        """Canned analytics over the whole history (``replay.report``)."""
        from replay.report import report

        with self._history(**catch_up) as store:
            return report(store, top=top)

    def audit_edge(self, source: str, target: str, **catch_up: Unpack[CatchUp]) -> EdgeAudit:
        """Every change of an edge's weight, with its cause (``replay.audit``);
        InputError for an unknown node or edge, naming close matches."""
        from replay.audit import audit_edge

        with self._history(**catch_up) as store:
            return audit_edge(store, source, target)

    def audit_node(self, node: str, *, limit: int = 20, **catch_up: Unpack[CatchUp]) -> NodeAudit:
        """A node's life, injections, weight changes and last ``limit`` accesses
        (``replay.audit``); InputError for an unknown node, naming close matches."""
        from replay.audit import audit_node

        with self._history(**catch_up) as store:
            return audit_node(store, node, limit=limit)

    def history_held(self) -> AbstractContextManager[None]:
        """Held while a command over the history reads the log and the settings: nothing
        here; a brain that others write beside (a daemon's) holds its gate."""
        return nullcontext()

    def queries(self) -> Running:
        """The worker processes of this brain's queries over the history."""
        from replay.isolation import Running

        with _QUERIES:
            if self._queries is None:
                self._queries = Running()
            return self._queries

    def interrupt_queries(self) -> None:
        """End every query over the history running for this brain (it fails with one
        line, its worker process killed) and refuse new ones: for a daemon that stops."""
        self.queries().stop()

    @contextmanager
    def _history(self, **catch_up: Unpack[CatchUp]) -> Iterator[AnalyticsStore]:
        """The analytics store caught up with the log (read under ``history_held``),
        its queries limited by the ``sql.*`` settings."""
        from replay.history import caught_up
        from replay.isolation import Limits

        with self.history_held():
            limits = Limits(**msgspec.structs.asdict(self.setting(Sql)))
        with caught_up(
            self.path,
            self.log,
            self.warn,
            held=self.history_held,
            limits=limits,
            running=self.queries(),
            **catch_up,
        ) as store:
            yield store

    def diff(
        self,
        start: str | int,
        end: str | int | None = None,
        *,
        threshold: float = 0.0,
        top: int = 20,
    ) -> DiffReport:
        """How the graph changed between two points, seqs or ISO times (``ocb.whatif``).

        Raises:
            InputError: a point outside the history, ``start`` after ``end``, bad limits.
        """
        from ocb.whatif import diff

        return diff(self, start, end, threshold=threshold, top=top)

    def what_if(
        self,
        start: str | int = 0,
        *,
        threshold: float = 0.0,
        top: int = 20,
        queries: int = 50,
        progress: Replaying | None = None,
        **learning: Unpack[Relearning],
    ) -> WhatIfReport:
        """Re-decide the learning after ``start`` with other ``learning`` settings in a
        scratch brain and compare it with this one, which never changes (``ocb.whatif``).

        Raises:
            InputError: a bad point, rule, value or limit; nothing is recorded.
        """
        from ocb.whatif import what_if

        return what_if(
            self,
            start,
            threshold=threshold,
            top=top,
            queries=queries,
            progress=progress,
            **learning,
        )

    def read_lines(self, rel: str, start: int = 1, lines: int | None = None) -> Excerpt:
        """Lines ``start`` .. ``start + lines - 1`` of the workspace file ``rel`` (at most
        2,000; ``lines`` None: to the end), secrets redacted, as ``memory_get`` reads
        them (``ocb.graph.reads``). Only a file the brain indexes is read.

        Raises:
            WorkspaceError: the brain has no workspace, or ``rel`` is refused.
            InputError: ``start`` or ``lines`` is below 1, or ``start`` is past the end.
        """
        from ocb.graph.reads import read_workspace_lines

        return read_workspace_lines(self, rel, start, lines)
