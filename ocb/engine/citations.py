"""Citations as an answer writes them, mapped to the chunks a trace fired.

An answer cites what it used as ``path#L12-L20``, ``path#L12`` or ``path`` alone (a
whole file it read), an injected node as ``inject:<id>``; a citation may come wrapped
as the context block or Markdown shows it (``[path#L3-L5]``, backticks). A citation
names a fired chunk when the chunk is of that file (or cites a merged copy there) and
its lines overlap the cited ones; a file alone names every fired chunk of the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath

import msgspec

from projections.graph import Node, State

__all__ = ["Citation", "match_citations", "parse_citation"]

_CITE = re.compile(r"^(?P<path>.+?)(?:#L(?P<start>\d+)(?:-L?(?P<end>\d+))?)?$")
_WRAP = "[]()`'\" \t<>"


class Citation(msgspec.Struct, frozen=True):
    """A cited file and its lines (1-based, inclusive; 0 and 0 for the whole file), or
    an injected node's source (``inject:<id>``, lines 0)."""

    path: str
    start: int = 0
    end: int = 0

    def covers(self, path: str, start: int, end: int) -> bool:
        """Whether this citation names lines ``start``..``end`` of ``path``."""
        if path != self.path:
            return False
        return self.start == 0 or (start <= self.end and self.start <= end)


def parse_citation(text: str) -> Citation | None:
    """The citation ``text`` writes, or None when it names nothing (empty)."""
    raw = text.strip().strip(_WRAP)
    if not raw:
        return None
    if raw.startswith("inject:"):
        return Citation(raw)
    m = _CITE.match(raw)
    assert m is not None  # ".+?" matches any non-empty text
    path = PurePosixPath(m["path"]).as_posix().removeprefix("./")
    if m["start"] is None:
        return Citation(path)
    start = int(m["start"])
    end = int(m["end"]) if m["end"] is not None else start
    return Citation(path, min(start, end), max(start, end))


def _spans(node: Node) -> Iterable[tuple[str, int, int]]:
    """Where a node's text stands: its own lines and those of the copies merged into it."""
    if not node.path:
        yield node.source, 0, 0
        return
    yield node.path, node.start_line, node.end_line
    for src in node.also:
        c = parse_citation(src)
        if c is not None and c.start:
            yield c.path, c.start, c.end


def cites(c: Citation, node: Node) -> bool:
    """Whether the citation names the node."""
    return any(c.covers(*span) for span in _spans(node))


def match_citations(
    graph: State, fired: Sequence[str], cited: Sequence[str]
) -> tuple[list[str], list[Citation], list[str]]:
    """The fired nodes the citations name (sorted), the citations that named one, and
    the citations that named none (as given, in order, without repeats)."""
    nodes = [graph.nodes[n] for n in fired if n in graph.nodes]
    matched: set[str] = set()
    hits: list[Citation] = []
    unmatched: list[str] = []
    for text in dict.fromkeys(cited):
        c = parse_citation(text)
        got = {n.id for n in nodes if c is not None and cites(c, n)}
        if got:
            matched |= got
            hits.append(c)  # type: ignore[arg-type]
        else:
            unmatched.append(text)
    return sorted(matched), hits, unmatched
