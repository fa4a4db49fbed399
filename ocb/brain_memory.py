"""The typed-memory commands of a brain (``ocb.brain.Brain`` inherits them): facts
written into the workspace's daily logs, recalled, reflected into ``bank/`` pages, and
the current facts of the knowledge graph. Each delegates to its ``ocb.memory`` module,
imported when it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ocb.store import Store

if TYPE_CHECKING:
    from ocb.graph.file_text import FileAt
    from ocb.memory.compact import CompactReport
    from ocb.memory.kg import KgHistory, KgSetReport, KgView
    from ocb.memory.recall_service import RecallAnswer
    from ocb.memory.reflect import Judge, ReflectReport, Summarize
    from ocb.memory.retain import RetainReport

__all__ = ["Estimate", "MemoryCommands"]

Estimate = Callable[[str, str, list[str]], float]


class MemoryCommands:
    """Retain, recall, reflect and the knowledge graph, over ``self.store``."""

    store: Store

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
            self.store,
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
            self.store,
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

        return reflect(self.store, since, summarize=summarize, judge=judge, actor=actor)

    def compact(
        self,
        older_than: str = "30d",
        *,
        dry_run: bool = False,
        extractor: str = "",
        actor: str = "maintenance",
    ) -> CompactReport:
        """Turn the daily notes older than ``older_than`` into short summaries and move
        their facts to the bank pages they belong to (see ``ocb.memory.compact``);
        ``extractor``, a command, writes the summaries instead.

        Raises:
            InputError: a bad span, a failed extractor, or a brain opened as of a past
                point (but for a dry run).
            WorkspaceError: no workspace, or a file that may not be written (nothing is).
        """
        from ocb.memory.compact import compact

        return compact(self.store, older_than, dry_run=dry_run, extractor=extractor, actor=actor)

    def show_file(self, path: str) -> FileAt:
        """A workspace file as the brain recorded it at its last seq (or ``as_of``):
        see ``ocb.graph.file_text``.

        Raises:
            InputError: a path outside the workspace, or one not indexed then.
        """
        from ocb.graph.file_text import file_at

        self.store.load("graph")
        return file_at(self.store.graph, path, self.store.horizon)

    def kg_set(
        self, subject: str, predicate: str, value: str, source: str = "", *, actor: str = "cli"
    ) -> KgSetReport:
        """State a current fact (see ``ocb.memory.kg.kg_set``)."""
        from ocb.memory.kg import kg_set

        return kg_set(self.store, subject, predicate, value, source, actor=actor)

    def kg_get(self, subject: str, predicate: str | None = None) -> KgView:
        """The current facts of a subject, with staleness and conflicts (``kg_get``)."""
        from ocb.memory.kg import kg_get

        return kg_get(self.store, subject, predicate)

    def kg_subjects(self) -> list[str]:
        """Every subject with a current fact, sorted."""
        return sorted({e.subject for e in self.store.state("kg").entries.values()})

    def kg_history(self, subject: str, predicate: str | None = None) -> KgHistory:
        """Every statement of a subject, oldest first (``ocb.memory.kg.kg_history``)."""
        from ocb.memory.kg import kg_history

        return kg_history(self.store, subject, predicate)
