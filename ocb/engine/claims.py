"""Claims: facts an assistant said (``speaker`` assistant), which rank below the
workspace's evidence until something confirms them.

What an agent says is not what happened: an invented cause in a reply, captured as a
fact, would otherwise come back first the next time the question is asked. A claim is
recorded with its provenance (session, turn) and a lower confidence; ``query`` shows its
lines after every other result (``ocb.engine.passages.apart``) and ``recall`` ranks it
after every other fact. It stands as evidence once confirmed: by a positive outcome of
a judge other than the agent itself (``human``, ``harvester`` or ``teacher``) whose
answer used or cited the claim's lines, or by a fact of a user or a tool that says the
same (``projections.memory.State.claims``). An agent's own success (``self``) never
confirms what it said, or the claim would confirm itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from ocb.engine.citations import Citation
from projections.graph import State as Graph
from projections.memory import State as MemoryState

__all__ = ["CONFIRMING_SOURCES", "claim_lines", "confirmed_by"]

CONFIRMING_SOURCES = frozenset({"human", "harvester", "teacher"})
"""The reward sources whose positive outcome confirms the claims its answer used."""


def claim_lines(mem: MemoryState) -> dict[str, frozenset[int]]:
    """The lines (1-based) of every standing claim, by workspace file (a caller keeps
    them while ``mem.claims_seq`` is the same)."""
    out: dict[str, set[int]] = {}
    for f in mem.claims():
        out.setdefault(f.path, set()).update(range(f.start_line, f.end_line + 1))
    return {path: frozenset(lines) for path, lines in sorted(out.items())}


def confirmed_by(
    mem: MemoryState,
    graph: Graph,
    used: Sequence[str],
    cites: Sequence[Citation],
    *,
    reward: float,
    source: str,
) -> list[str]:
    """The standing claims an outcome confirms (sorted ids): for a positive outcome of
    a ``CONFIRMING_SOURCES`` judge, those whose lines the answer cited (``cites``) or
    that stand in a chunk it used by id (``used``)."""
    if reward <= 0 or source not in CONFIRMING_SOURCES or not (used or cites):
        return []
    spans = list(cites)
    for nid in used:
        node = graph.nodes.get(nid)
        if node is not None and node.path:
            spans.append(Citation(node.path, node.start_line, node.end_line))
    return sorted(
        f.id for f in mem.claims() if any(c.covers(f.path, f.start_line, f.end_line) for c in spans)
    )
