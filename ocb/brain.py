"""The Python API of a brain: one object per brain directory, one method per command.

``Brain`` holds the brain's ``Store`` (``brain.store``: the log, blobs, snapshots and
projections) and has one typed method per command, each delegating to the feature that
decides and records it; the CLI calls nothing else. Records are written only by the
commands: the log itself (``brain.log``) and the projections are there to read. Rarely
used commands' modules are imported when they run, so that a query starts fast.

Example:
    >>> brain, report = Brain.init("/tmp/brain", "examples/workspace")  # doctest: +SKIP
    >>> with brain:                                                      # doctest: +SKIP
    ...     answer = brain.query("how do I roll back a bad deploy", top=5)
    ...     brain.learn(1.0, trace_id=answer.trace_id)
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self, Unpack

import msgspec

from ocb.brain_checks import CheckCommands
from ocb.brain_history import HistoryCommands
from ocb.brain_memory import MemoryCommands
from ocb.engine.traverse import Scorer
from ocb.graph.inject import inject
from ocb.graph.learn import learn
from ocb.graph.query import query, route_scorer, trace_of
from ocb.graph.sync import Progress, Scanned, scan, sync
from ocb.reports import Answer, InjectReport, LearnReport, ReembedReport, SyncReport
from ocb.settings import S
from ocb.store import Store, StoreOptions, Warn
from ocb_events.clock import Clock
from ocb_events.protocol import EventLog
from ocb_events.schema import QueryTraced, Record
from projections.graph import State as GraphState

if TYPE_CHECKING:
    from ocb.graph.retract import RetractReport
    from ocb.graph.route import TrainReport
    from ocb.graph.teach import TeachReport
    from ocb.graph.warm import WarmReport
    from ocb.memory.unretain import FactRetraction
    from ocb.scratch import Progress as Replaying
    from ocb.upkeep.blobs import BlobReport
    from ocb.upkeep.forget import ForgetReport
    from ocb.upkeep.health import Health
    from ocb.upkeep.maintain import AnchorReport, MaintenanceReport
    from ocb.whatif import DiffReport, Relearning, WhatIfReport
    from workspace_sync.reads import Excerpt

__all__ = ["Answer", "Brain", "InjectReport", "LearnReport", "SyncReport"]


class Brain(MemoryCommands, HistoryCommands, CheckCommands):
    """A brain directory with one method per command: ``Brain(path)`` opens one,
    ``Brain.create(path)`` makes one, ``Brain.init(path, workspace)`` makes and syncs
    one; the keywords are those of ``Store`` (``writer``, ``as_of``, ``clock`` ...).
    The checks that must work on a log that cannot be opened take the brain's path:
    ``Brain.doctor_at``, ``Brain.repair`` and ``Brain.verify_at``.

    Args:
        path: the brain directory.
        create: create the directory when it does not exist.
        options: how to open its store (see ``Store``).

    Raises:
        BrainNotFound: no brain at ``path`` and ``create`` is False.
        BrainLocked: another process holds the writer lock.
    """

    _store_type: ClassVar[type[Store]] = Store

    def __init__(
        self, path: str | Path, *, create: bool = False, **options: Unpack[StoreOptions]
    ) -> None:
        self.store: Store = self._store_type(path, create=create, **options)
        """The brain's storage: what every command reads and records through."""

    @classmethod
    def create(cls, path: str | Path, **options: Unpack[StoreOptions]) -> Self:
        """Open a brain for writing, creating its directory if needed."""
        return cls(path, create=True, **options)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(snapshot=exc_type is None)

    def close(self, *, snapshot: bool = True) -> None:
        """Close the brain (``Store.close``): snapshots that are due are written first
        unless ``snapshot`` is False."""
        self.store.close(snapshot=snapshot)

    # ------------------------------------------------------------------ what it holds

    @property
    def path(self) -> Path:
        """The brain directory."""
        return self.store.path

    @property
    def log(self) -> EventLog:
        """The brain's event log, to read (``read``, ``last_seq`` ...): records are
        written by the commands."""
        return self.store.log

    @property
    def graph(self) -> GraphState:
        """The graph projection (nodes, edges, files), folded up to the log's end."""
        return self.store.graph

    @property
    def clock(self) -> Clock:
        """The clock that dates the brain's new records."""
        return self.store.clock

    @property
    def warn(self) -> Warn:
        """What receives the brain's warnings (settable)."""
        return self.store.warn

    @warn.setter
    def warn(self, warn: Warn) -> None:
        self.store.warn = warn

    @property
    def as_of(self) -> int | None:
        """The seq this brain is a read-only view of, or None for its present."""
        return self.store.as_of

    def events(
        self, *, since: int = 0, types: Sequence[str] = (), limit: int | None = None
    ) -> Iterator[Record]:
        """The records after seq ``since``, of the given ``types`` only when given, at
        most ``limit`` (``Store.events``)."""
        return self.store.events(since=since, types=types, limit=limit)

    def state(self, name: str) -> Any:
        """The state of the projection ``name`` (``config``, ``traces`` ...)."""
        return self.store.state(name)

    def setting(self, section: type[S], **overrides: object) -> S:
        """The settings of ``section`` in force (``ocb.settings``), with ``overrides``."""
        return self.store.setting(section, **overrides)

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
            regenerated = restore_lost_vectors(brain.store)
            report = sync(brain.store, workspace, progress=progress, scanned=scanned)
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
            self.store, workspace, progress=progress, scanned=scanned, cause=cause, paths=paths,
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
            self.store, text, top=top, chat_id=chat_id, record=record, mode=mode, actor=actor,
            **traversal,
        )  # fmt: skip

    def trace(self, trace_id: str = "", chat_id: str = "") -> QueryTraced:
        """A recorded trace, by id or as the last trace of a chat (InputError: none)."""
        return trace_of(self.store, trace_id, chat_id)

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
        record what the learning rule decides: the change of the routes of the question
        (``transfer``, the default, and ``route``) or of the edges walked (``pg``,
        ``heuristic``; an explicit path always teaches the edges, with ``pg`` under a
        route rule).

        Args:
            outcome: the reward, in [-1, 1].
            rule: ``transfer`` (the default), ``route``, ``pg`` or ``heuristic``.
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
            self.store,
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
            self.store,
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
            self.store,
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

        return retract_fact(self.store, fact_id, dry_run=dry_run, actor=actor)

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
        return teach(self.store, lines, apply=apply, relevance=relevance)

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
        return warm(self.store, files, corrections=corrections, dry_run=dry_run, progress=progress)

    def train_route(self, *, min_examples: int = 20) -> TrainReport:
        """Train the route model of the ``learned`` route mode and record it.

        Raises:
            InputError: fewer than ``min_examples`` labelled decisions.
        """
        from ocb.graph.route import train

        return train(self.store, min_examples=min_examples)

    def route_scorer(self) -> Scorer | None:
        """The scorer of the route model in force, or None when none was trained."""
        return route_scorer(self.store)

    # ------------------------------------------------------------------ upkeep

    def set_config(self, key: str, value: object, *, actor: str = "cli") -> Record | None:
        """Record a setting, validated completely first (nothing is recorded for an
        unknown key or a bad value); None when it already has that value.

        Raises:
            InputError: an unknown key (naming the close matches) or a bad value.
        """
        from ocb.upkeep.config import set_config

        return set_config(self.store, key, value, actor=actor)

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
            self.store, ops, dry_run=dry_run, clock=self.clock, top=top, actor=actor, **maintenance
        )

    def anchor(
        self, authority: str, *, node_ids: Sequence[str] = (), path: str = ""
    ) -> AnchorReport:
        """Set the authority of nodes, or of every chunk of a file.

        Raises:
            InputError: an unknown authority, node id or file; nothing named.
        """
        from ocb.upkeep.maintain import anchor

        return anchor(self.store, authority, node_ids=node_ids, path=path)

    def health(
        self, *, window: int = 100, apply: bool = False, actor: str = "cli"
    ) -> tuple[Health, list[Record]]:
        """Tier shares and query costs over the last ``window`` traces, with proposed
        setting fixes (recorded with ``apply``; see ``ocb.upkeep.health``).

        Raises:
            InputError: a window below 1.
        """
        from ocb.upkeep.health import check

        return check(self.store, window=window, apply=apply, actor=actor)

    def regenerate_blobs(self) -> BlobReport:
        """Write back the lost vector blobs the log names, embedding their texts again."""
        from ocb.upkeep.blobs import regenerate_blobs

        return regenerate_blobs(self.store)

    def reembed(self, spec: str, *, progress: Progress | None = None) -> ReembedReport:
        """Switch every vector to the embedder ``spec`` names, in one append."""
        from ocb.upkeep.reembed import reembed

        return reembed(self.store, spec, progress)

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
            self.store, seq=seq, path=path, fact=fact, text=text, reason=reason, dry_run=dry_run
        )

    def write_snapshots(self) -> list[tuple[str, int]]:
        """Write a snapshot of every projection now: ``(projection, seq)`` of each."""
        from projections import PROJECTIONS

        self.store.load(*PROJECTIONS)
        return self.store.save_snapshots(force=True, strict=True)

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

        return diff(self.store, start, end, threshold=threshold, top=top)

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
            self.store,
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

        return read_workspace_lines(self.store, rel, start, lines)
