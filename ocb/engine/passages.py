"""Passages: the lines of a chunk an answer shows, at line boundaries with exact sources.

A chunk is found whole, but its lines are not all worth their characters:

* a chunk's leading and trailing headings and blank lines are left out (the heading is
  in the source's file and the chunk's ``heading``);
* in a dialogue (lines written ``- 13:56 Priya: ...`` or ``Priya: ...``), when the
  question names a speaker of the chunk, the passage keeps that speaker's lines; the
  other speakers' lines become passages of their own that an answer ranks after every
  focused one (``split``);
* a passage cut to fit a budget ends at a line boundary and says so (``cut_to``);
* the lines of claims (facts an assistant said that nothing confirmed) become passages
  of their own, which an answer ranks after every other (``apart``).

Every passage cites exactly the lines it shows (``path#Lstart-Lend``). A chunk whose
text does not map line for line onto its range (a slice of a long line, an injected
node) or that cites merged copies of itself is one passage, whole.
"""

from __future__ import annotations

import re

import msgspec

from projections.graph import Node

_SPEAKER = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\[?\d{1,2}:\d{2}(?::\d{2})?\]?\s+)?"  # "- 13:56 "
    r"\**([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2})\**:\s"  # "Priya: ", "**Ana Lima**: "
)
_HEADING = re.compile(r"^\s*(?:#{1,6}\s|$)")


class Passage(msgspec.Struct, frozen=True):
    """Lines ``start``..``end`` of a node (file line numbers; 0 for an injected node),
    their text, and whether a budget cut the passage short."""

    node: str
    start: int
    end: int
    text: str
    cut: bool = False

    def source(self, node: Node) -> str:
        if not node.path:
            return node.source
        return f"{node.path}#L{self.start}-L{self.end}"


def whole(node: Node) -> Passage:
    """A node as one passage."""
    return Passage(node.id, node.start_line, node.end_line, node.text)


def _lines(node: Node) -> list[str] | None:
    """The node's lines when they map one to one onto its line range (and it cites no
    merged copies, whose ranges match its own whole)."""
    if not node.path or node.start_col or node.also:
        return None
    lines = node.text.split("\n")
    return lines if len(lines) == node.end_line - node.start_line + 1 else None


def speaker(line: str) -> str:
    """Who speaks a dialogue line (``- 13:56 Priya: ...`` -> ``Priya``), or ""."""
    m = _SPEAKER.match(line)
    return m[1] if m else ""


def named_in(query: str) -> frozenset[str]:
    """The capitalised words of a question: the names a speaker must match (whole
    words, case-sensitive: "Priya", not "priya")."""
    return frozenset(re.findall(r"\b[A-Z][\w'.-]*", query))


def _runs(node: Node, lines: list[str], keep: list[int]) -> list[Passage]:
    """Contiguous runs of the kept line offsets, as passages."""
    out: list[Passage] = []
    for i in keep:
        if out and out[-1].end == node.start_line + i - 1:
            last = out[-1]
            out[-1] = Passage(node.id, last.start, last.end + 1, last.text + "\n" + lines[i])
        else:
            at = node.start_line + i
            out.append(Passage(node.id, at, at, lines[i]))
    return out


def split(node: Node, names: frozenset[str]) -> tuple[list[Passage], list[Passage]]:
    """A node's focused passages and the rest (see the module's doc): without a named
    speaker, one passage of its lines between leading and trailing headings."""
    lines = _lines(node)
    if lines is None:
        return [whole(node)], []
    body = [i for i, line in enumerate(lines) if not _HEADING.match(line)]
    if not body:
        return [whole(node)], []
    inner = list(range(body[0], body[-1] + 1))
    who: dict[int, str] = {}
    for i in inner:  # a line without a speaker continues the turn before it
        who[i] = speaker(lines[i]) or who.get(i - 1, "")
    said = {w for w in who.values() if w}
    focus = {w for w in said if all(part in names for part in w.split())}
    if not focus or focus == said:
        return _runs(node, lines, inner), []
    mine = [i for i in inner if who[i] in focus]
    rest = [i for i in inner if who[i] not in focus and lines[i].strip()]
    return _runs(node, lines, mine), _runs(node, lines, rest)


def cut_to(p: Passage, room: int) -> Passage | None:
    """The passage's first lines that fit in ``room`` characters, marked as cut (None:
    not even its first line fits)."""
    lines = p.text.split("\n")
    size, n = 0, 0
    for line in lines:
        extra = len(line) + (1 if n else 0)
        if size + extra > room:
            break
        size, n = size + extra, n + 1
    if n == 0 or p.start == 0:
        return None
    return Passage(p.node, p.start, p.start + n - 1, "\n".join(lines[:n]), cut=n < len(lines))


def _apart_lines(p: Passage, claims: frozenset[int]) -> tuple[list[Passage], list[Passage]]:
    """A passage that maps line for line onto its range, split into runs of lines that
    are not claim lines and runs that are (blank lines go with the line before them;
    a run of blank lines alone is dropped)."""
    lines = p.text.split("\n")
    keep: list[Passage] = []
    said: list[Passage] = []
    run: list[int] = []
    side = False

    def close() -> None:
        while run and not lines[run[-1]].strip():
            run.pop()
        if run:
            text = "\n".join(lines[i] for i in run)
            (said if side else keep).append(
                Passage(p.node, p.start + run[0], p.start + run[-1], text)
            )
        run.clear()

    for i, line in enumerate(lines):
        mine = (p.start + i) in claims if line.strip() else side
        if run and mine != side:
            close()
        if run or line.strip():
            run.append(i)
        side = mine
    close()
    return keep, said


def apart(
    p: Passage, claims: frozenset[int], split_lines: bool = True
) -> tuple[list[Passage], list[Passage]]:
    """A passage's lines that are not ``claims`` (line numbers of its file: what an
    assistant said and nothing confirmed) and those that are, as passages. A passage
    that cannot be split (an injected node, a slice of a long line, ``split_lines``
    False) is a claim only when every line it shows but headings and blank ones is."""
    if p.start == 0 or not claims:
        return [p], []
    lines = p.text.split("\n")
    mapped = len(lines) == p.end - p.start + 1
    if mapped and split_lines:
        return _apart_lines(p, claims)
    body = [p.start + i for i, line in enumerate(lines) if not _HEADING.match(line)]
    if mapped and body and all(n in claims for n in body):
        return [], [p]
    return [p], []
