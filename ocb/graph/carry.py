"""How a sync that moves text between files keeps the text's identity (``ocb compact``)."""

from __future__ import annotations

from typing import Protocol

from ocb_events.schema import Event
from projections.graph import State
from workspace_sync import PreviousFacts


class Carry(Protocol):
    """How a sync that moves text between files (``ocb compact``) keeps its identity:
    ``chunks`` rewrites the decided file events so that moved text keeps its chunk ids,
    ``facts`` adds to each destination file the facts that moved into it (so they keep
    their ids)."""

    def chunks(self, graph: State, events: list[Event]) -> list[Event]: ...

    def facts(self, previous: dict[str, PreviousFacts]) -> dict[str, PreviousFacts]: ...
