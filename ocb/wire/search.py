"""A query's answer as the memory tools show it: search hits (MCP's ``memory_search``,
the OpenClaw plugin's ``memory_search`` and ``openclaw brain search``) and the cited
context block the plugin puts before a prompt. Shaped here, once, for every client.

A hit in the ``mcp`` style: ``{path, startLine, endLine, score, snippet, citation, id,
kind}``; in the ``openclaw`` style (OpenClaw's own memory's envelope): ``{path,
startLine, endLine, score, snippet, source: "memory", citation}`` and ``claim: true``
for what an assistant said that nothing confirmed, the score rounded to 4 places, the
snippet ending with ``Source: <citation>``, and a one-line citation as ``path#L12``.
Lines are 1-based and inclusive; an injected node has none (0, and its id as path).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ocb.reports import Answer, Hit

SNIPPET_CHARS = 700
"""The longest snippet of a hit, its last character an ellipsis when cut (``memory_get``
reads the whole range)."""
CONTEXT_OPEN = "<ocb-memory>"
CONTEXT_CLOSE = "</ocb-memory>"
CONTEXT_HEADER = (
    "Recalled from memory (OpenClawBrain) for this turn: prefer it over guessing. "
    "Cite what you use as path#L; ask memory_search for more."
)
CLAIM_MARK = " (an agent's claim, unconfirmed)"
"""How the context block marks lines an assistant said that nothing confirmed."""
MIN_ROOM = 80
"""The fewest characters of a chunk worth adding to the context block."""

Style = Literal["mcp", "openclaw"]
_SOURCE = re.compile(r"^(?P<path>.*)#L(?P<start>\d+)(?:-L(?P<end>\d+))?$")


def split_source(source: str) -> tuple[str, int, int]:
    """``path#L12-L20`` (or ``path#L12``) as its path, first and last line; any other
    source (an injected node's) as itself and 0, 0."""
    m = _SOURCE.match(source)
    if m is None:
        return source, 0, 0
    start = int(m["start"])
    return m["path"], start, int(m["end"]) if m["end"] else start


def snippet(text: str) -> str:
    """``text`` cut to ``SNIPPET_CHARS``, an ellipsis last when cut."""
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"


def _short_citation(path: str, start: int, end: int) -> str:
    if start <= 0:
        return path
    return f"{path}#L{start}" if start == end else f"{path}#L{start}-L{end}"


def search_hit(h: Hit, style: Style = "mcp") -> dict[str, Any]:
    """One result of a query as a memory tool's hit, in ``style`` (see the module)."""
    path, start, end = split_source(h.source)
    if style == "mcp":
        return {
            "path": path, "startLine": start, "endLine": end, "score": h.score,
            "snippet": snippet(h.text), "citation": h.source, "id": h.id, "kind": h.kind,
        }  # fmt: skip
    cite = _short_citation(path, start, end)
    hit: dict[str, Any] = {
        "path": path, "startLine": start, "endLine": end,
        "score": math.floor(h.score * 1e4 + 0.5) / 1e4,  # half up, as JavaScript rounds
        "snippet": f"{snippet(h.text).rstrip()}\n\nSource: {cite}",
        "source": "memory", "citation": cite,
    }  # fmt: skip
    if h.claim:
        hit["claim"] = True
    return hit


def search_json(a: Answer, style: Style = "mcp", min_score: float | None = None) -> dict[str, Any]:
    """``{trace_id, query, fired, results}``: the hits best first, none scoring under
    ``min_score``, and ``fired`` the sources of the results that fired (what a client
    credits once it knows the outcome)."""
    hits = [search_hit(h, style) for h in a.results if min_score is None or h.score >= min_score]
    return {
        "trace_id": a.trace_id,
        "query": a.query,
        "fired": [h.source for h in a.results if h.fired],
        "results": hits,
    }


def context_block(a: Answer, budget: int) -> tuple[str, list[Hit]]:
    """The fired results as a cited block of at most ``budget`` characters (tags
    included): whole chunks while they fit, then the next one cut to what is left,
    claims marked as such; and the results it holds. ``""`` when nothing fits."""
    left = budget - (len(CONTEXT_OPEN) + len(CONTEXT_HEADER) + len(CONTEXT_CLOSE) + 2)
    parts: list[str] = []
    used: list[Hit] = []
    for h in a.results:
        if not h.fired:
            continue
        head = f"\n[{h.source}]{CLAIM_MARK if h.claim else ''}\n"
        room = left - len(head)
        if room < MIN_ROOM:
            break
        body = h.text.strip()
        cut = body if len(body) <= room else body[: room - 1] + "…"
        parts.append(head + cut)
        used.append(h)
        left -= len(head) + len(cut)
    if not parts:
        return "", used
    return f"{CONTEXT_OPEN}\n{CONTEXT_HEADER}{''.join(parts)}\n{CONTEXT_CLOSE}", used


def context_json(a: Answer, budget: int) -> dict[str, Any]:
    """``{trace_id, fired, text, used}``: the context block (``""`` when nothing fired
    or fits), the sources of the results that fired and of those it holds."""
    text, used = context_block(a, budget)
    return {
        "trace_id": a.trace_id,
        "fired": [h.source for h in a.results if h.fired],
        "text": text,
        "used": [h.source for h in used],
    }
