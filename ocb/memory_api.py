"""The typed-memory commands of a brain (retain, recall, reflect, current facts), a
mixin of ``ocb.brain.Brain``; each delegates to the module that decides it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ocb.memory.kg import KgHistory, KgSetReport, KgView
    from ocb.memory.recall import FactIndex
    from ocb.memory.reflect import ReflectReport
    from ocb.memory.retain import RecallAnswer, RetainReport


class MemoryCommands:
    """retain, recall, reflect and kg_* on a Brain."""

    _fact_index: tuple[str, FactIndex] | None = None
    """The search index of the current facts and the key it was built for."""

    def retain(self, content: str, **kw: Any) -> RetainReport:
        """Write a fact into today's daily log and record it (see ``ocb.memory.retain.retain``).

        Raises:
            InputError: an unknown kind, a salience or confidence outside [0, 1].
            WorkspaceError: the brain has no workspace.
        """
        from ocb.memory.retain import retain

        return retain(self, content, **kw)  # type: ignore[arg-type]

    def recall(self, query: str = "", **kw: Any) -> RecallAnswer:
        """Recall facts and record the trace (see ``ocb.memory.retain.recall``).

        Raises:
            InputError: a bad date, kind, fraction, or an entity no fact mentions.
        """
        from ocb.memory.retain import recall

        return recall(self, query, **kw)  # type: ignore[arg-type]

    def reflect(self, since: str = "7d", **kw: Any) -> ReflectReport:
        """Rewrite entity summaries and move opinion confidence under ``bank/`` (see
        ``ocb.memory.reflect.reflect``).

        Raises:
            InputError: a bad ``since`` or a brain opened as of a past point.
            WorkspaceError: no workspace, or a bank page changed while reflect ran.
        """
        from ocb.memory.reflect import reflect

        return reflect(self, since, **kw)  # type: ignore[arg-type]

    def kg_set(self, subject: str, predicate: str, value: str, source: str = "") -> KgSetReport:
        """State a current fact (see ``ocb.memory.kg.kg_set``)."""
        from ocb.memory.kg import kg_set

        return kg_set(self, subject, predicate, value, source)  # type: ignore[arg-type]

    def kg_get(self, subject: str, predicate: str | None = None) -> KgView:
        """The current facts of a subject, with staleness and conflicts (``kg_get``)."""
        from ocb.memory.kg import kg_get

        return kg_get(self, subject, predicate)  # type: ignore[arg-type]

    def kg_history(self, subject: str, predicate: str | None = None) -> KgHistory:
        """Every statement of a subject, oldest first (``ocb.memory.kg.kg_history``)."""
        from ocb.memory.kg import kg_history

        return kg_history(self, subject, predicate)  # type: ignore[arg-type]
