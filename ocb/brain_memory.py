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

    def kg_history(self, subject: str, predicate: str | None = None) -> KgHistory:
        """Every statement of a subject, oldest first (``ocb.memory.kg.kg_history``)."""
        from ocb.memory.kg import kg_history

        return kg_history(self.store, subject, predicate)
