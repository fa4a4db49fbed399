"""Chunking Markdown and plain text into pieces with 1-based, inclusive line ranges.

A piece is either whole lines or a slice of one long line. Its text is the file's
lines ``start_line..end_line`` joined by ``\\n``, from character ``start_col`` of the
first line on, for ``len(text)`` characters: ``start_col`` is 0 and the text is exactly
those lines, except for a slice (``start_line == end_line``), which is part of its
line. So a reader can always find a piece in the file. Headings start a new piece and
give the pieces under them a breadcrumb (``Rollback > Verify``) that is indexed but not
part of the text. Paragraphs of one section are merged up to ``target_chars``; a block
longer than that (a long list, a conversation) is split between lines, at list items
when it has them. Fenced code blocks are never split at a blank line (unless they
are longer than ``max_chars``).

No piece is longer than ``max_chars``: a block that is still longer is split between
any lines, and a line longer than ``max_chars`` is cut into slices of about
``target_chars`` at whitespace (the whitespace between slices belongs to no piece);
a word is cut only when it alone is longer than ``max_chars``.
"""

from __future__ import annotations

import re

import msgspec

HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
"""A Markdown heading: its level marks and its text."""
FENCE = re.compile(r"^ {0,3}(```|~~~)")
"""The opening or closing line of a fenced code block."""
_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d+[.)])\s")

_SPACE = re.compile(r"\s")
_NON_SPACE = re.compile(r"\S")

TARGET_CHARS = 600
MAX_CHARS = 2000


class Piece(msgspec.Struct, frozen=True):
    """A chunk of a file: its text, line range, heading breadcrumb, and the character
    of ``start_line`` its text starts at (0 but for a slice of a long line)."""

    text: str
    start_line: int
    end_line: int
    heading: str = ""
    start_col: int = 0


def split_lines(text: str) -> list[str]:
    """Lines of a file as editors number them (no phantom line after a final newline)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


class _Block(msgspec.Struct):
    start: int  # 0-based line index
    end: int  # inclusive
    heading_level: int = 0
    heading_text: str = ""


def _blocks(lines: list[str], markdown: bool) -> list[_Block]:
    """Runs of non-blank lines; headings are blocks of their own; fences stay whole."""
    blocks: list[_Block] = []
    start: int | None = None
    fence: str | None = None
    for i, line in enumerate(lines):
        if markdown:
            m = FENCE.match(line)
            if m:
                fence = None if fence == m.group(1) else (fence or m.group(1))
            elif fence is None:
                h = HEADING.match(line)
                if h:
                    if start is not None:
                        blocks.append(_Block(start, i - 1))
                        start = None
                    blocks.append(_Block(i, i, len(h.group(1)), h.group(2)))
                    continue
        if not line.strip() and fence is None:
            if start is not None:
                blocks.append(_Block(start, i - 1))
                start = None
        elif start is None:
            start = i
    if start is not None:
        blocks.append(_Block(start, len(lines) - 1))
    return blocks


def _size(lines: list[str], s: int, e: int) -> int:
    return sum(len(lines[i]) + 1 for i in range(s, e + 1))


Unit = tuple[int, int] | Piece
"""A run of whole lines (0-based start, inclusive end), or a slice of one line."""


def _split_block(lines: list[str], b: _Block, target: int, cap: int) -> list[Unit]:
    """Cut a long block into line ranges of about ``target`` characters, none over
    ``cap`` (a line over ``cap`` becomes slices) and none of blank lines only."""
    size = _size(lines, b.start, b.end)
    if size <= target:
        return [(b.start, b.end)]
    items = any(_ITEM.match(lines[i]) for i in range(b.start, b.end + 1))
    out: list[tuple[int, int]] = []
    cur, used = b.start, 0
    for i in range(b.start, b.end + 1):
        n = len(lines[i]) + 1
        boundary = not items or _ITEM.match(lines[i]) is not None
        if i > cur and boundary and used + n > target:
            out.append((cur, i - 1))
            cur, used = i, 0
        used += n
    out.append((cur, b.end))
    text = [(s, e) for s, e in out if any(lines[i].strip() for i in range(s, e + 1))]
    return [u for s, e in text for u in _capped(lines, s, e, target, cap)]


def _capped(lines: list[str], s: int, e: int, target: int, cap: int) -> list[Unit]:
    """Lines ``s..e`` as they are when within ``cap``, else runs of about ``target``
    split between any lines, and slices of each line longer than ``cap``."""
    if _size(lines, s, e) - 1 <= cap:
        return [(s, e)]
    out: list[Unit] = []
    cur, used = -1, 0

    def flush(end: int) -> None:
        while not lines[end].strip():  # a run ends at text too
            end -= 1
        out.append((cur, end))

    for i in range(s, e + 1):
        n = len(lines[i]) + 1
        if cur >= 0 and (used + n > target or n - 1 > cap):
            flush(i - 1)
            cur = -1
        if n - 1 > cap:
            out.extend(Piece(t, i + 1, i + 1, "", c) for c, t in _slices(lines[i], target, cap))
            continue
        if cur < 0:
            if not lines[i].strip():
                continue  # a run starts at text (blank lines inside fences)
            cur, used = i, 0
        used += n
    if cur >= 0:
        flush(e)
    return out


def _slices(line: str, target: int, cap: int) -> list[tuple[int, str]]:
    """A long line cut at whitespace into (start column, text) slices of about
    ``target`` characters: a slice ends at the last whitespace within ``target``, or
    after its first word when that word is longer (up to ``cap``); a word longer than
    ``cap`` is cut every ``target`` characters to its end. Whitespace between slices
    is dropped."""
    target = max(1, min(target, cap))
    out: list[tuple[int, str]] = []
    n = len(line)
    pos = _next_word(line, 0)
    while pos < n:
        end = pos + target
        if end >= n:
            cut = n
        else:
            cut = _last_space(line, pos, end)
        if cut < 0:  # the first word is longer than target
            whole = pos == 0 or line[pos - 1].isspace()  # not the rest of a cut word
            m = _SPACE.search(line, pos, min(n, pos + cap + 1)) if whole else None
            cut = m.start() if m else (n if whole and n - pos <= cap else end)
        out.append((pos, line[pos:cut].rstrip()))
        pos = _next_word(line, cut)
    return out


def _last_space(line: str, pos: int, end: int) -> int:
    """The last whitespace in ``line[pos + 1 : end + 1]``, or -1."""
    if _SPACE.search(line, pos + 1, end + 1) is None:  # inside a long word: no scan
        return -1
    for k in range(end, pos, -1):
        if line[k].isspace():
            return k
    return -1


def _next_word(line: str, pos: int) -> int:
    m = _NON_SPACE.search(line, pos)
    return m.start() if m else len(line)


def _crumb(stack: list[tuple[int, str]]) -> str:
    return " > ".join(t for _, t in stack if t)


def chunk_text(
    text: str,
    *,
    markdown: bool = True,
    target_chars: int = TARGET_CHARS,
    max_chars: int = MAX_CHARS,
) -> list[Piece]:
    """Split a file into pieces.

    Args:
        text: the file's content.
        markdown: treat ``#`` lines as headings and respect code fences.
        target_chars: merge paragraphs up to, and split blocks beyond, this size.
        max_chars: no piece is longer (a longer line is cut into slices).

    Returns:
        Pieces in file order, covering every non-whitespace character exactly once.
    """
    cap = max(1, max_chars)
    lines = split_lines(text)
    c = _Chunker(lines, min(target_chars, cap), cap)
    for b in _blocks(lines, markdown):
        if b.heading_level:
            c.heading(b)
        else:
            c.block(b)
    c.close()
    return c.pieces


class _Chunker:
    """The pieces of a file as its blocks come, in order, with the piece being built
    (``cur``: 0-based start and end lines), whether it holds more than headings
    (``body``) and the heading path above it (``stack``, ``crumb``)."""

    def __init__(self, lines: list[str], target: int, cap: int) -> None:
        self.lines, self.target, self.cap = lines, target, cap
        self.pieces: list[Piece] = []
        self.stack: list[tuple[int, str]] = []
        self.cur: tuple[int, int] | None = None
        self.body = False
        self.crumb = ""

    def close(self) -> None:
        if self.cur is not None:
            s, e = self.cur
            self.pieces.append(Piece("\n".join(self.lines[s : e + 1]), s + 1, e + 1, self.crumb))
            self.cur = None

    def heading(self, b: _Block) -> None:
        lines, cap, cur, stack = self.lines, self.cap, self.cur, self.stack
        # a heading directly under its parent heading joins it in one piece
        nested = cur is not None and not self.body and stack and stack[-1][0] < b.heading_level
        if not nested or cur is None or _size(lines, cur[0], b.end) - 1 > cap:
            self.close()
            nested = False
        while stack and stack[-1][0] >= b.heading_level:
            stack.pop()
        stack.append((b.heading_level, b.heading_text))
        self.crumb = _crumb(stack)[:cap]
        if len(lines[b.start]) > cap:
            units = _capped(lines, b.start, b.end, self.target, cap)
            self.pieces.extend(_with_crumb(units, self.crumb))
            self.body = True
            return
        cur = self.cur
        self.cur = (cur[0], b.end) if nested and cur is not None else (b.start, b.end)
        self.body = False

    def block(self, b: _Block) -> None:
        for unit in _split_block(self.lines, b, self.target, self.cap):
            self.body = True
            if isinstance(unit, Piece):
                self.close()
                self.pieces.append(msgspec.structs.replace(unit, heading=self.crumb))
                continue
            s, e = unit
            if self.cur is not None:
                if _size(self.lines, self.cur[0], e) <= self.target:
                    self.cur = (self.cur[0], e)
                    continue
                self.close()
            self.cur = (s, e)


def _with_crumb(units: list[Unit], crumb: str) -> list[Piece]:
    return [msgspec.structs.replace(u, heading=crumb) for u in units if isinstance(u, Piece)]
