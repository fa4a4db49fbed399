"""Chunking Markdown and plain text into pieces with 1-based, inclusive line ranges.

A piece's text is exactly the file's lines ``start_line..end_line`` joined by ``\\n``,
so a reader can always find it in the file. Headings start a new piece and give the
pieces under them a breadcrumb (``Rollback > Verify``) that is indexed but not part
of the text. Paragraphs of one section are merged up to ``target_chars``; a block
longer than that (a long list, a conversation) is split between lines, at list items
when it has them. Fenced code blocks are never split at a blank line.
"""

from __future__ import annotations

import re

import msgspec

HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
"""A Markdown heading: its level marks and its text."""
FENCE = re.compile(r"^ {0,3}(```|~~~)")
"""The opening or closing line of a fenced code block."""
_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d+[.)])\s")

TARGET_CHARS = 600


class Piece(msgspec.Struct, frozen=True):
    """A chunk of a file: its text, line range and heading breadcrumb."""

    text: str
    start_line: int
    end_line: int
    heading: str = ""


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


def _split_block(lines: list[str], b: _Block, target: int) -> list[tuple[int, int]]:
    """Cut a long block into line ranges of about ``target`` characters."""
    size = sum(len(lines[i]) + 1 for i in range(b.start, b.end + 1))
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
    return out


def _crumb(stack: list[tuple[int, str]]) -> str:
    return " > ".join(t for _, t in stack if t)


def chunk_text(
    text: str, *, markdown: bool = True, target_chars: int = TARGET_CHARS
) -> list[Piece]:
    """Split a file into pieces.

    Args:
        text: the file's content.
        markdown: treat ``#`` lines as headings and respect code fences.
        target_chars: merge paragraphs up to, and split blocks beyond, this size.

    Returns:
        Pieces in file order, covering every non-blank line exactly once.
    """
    lines = split_lines(text)
    pieces: list[Piece] = []
    stack: list[tuple[int, str]] = []
    cur: tuple[int, int] | None = None  # open piece (start, end), 0-based
    body = False  # whether the open piece holds more than headings
    crumb = ""

    def close() -> None:
        nonlocal cur
        if cur is not None:
            s, e = cur
            pieces.append(Piece("\n".join(lines[s : e + 1]), s + 1, e + 1, crumb))
            cur = None

    for b in _blocks(lines, markdown):
        if b.heading_level:
            # a heading directly under its parent heading joins it in one piece
            nested = cur is not None and not body and stack and stack[-1][0] < b.heading_level
            if not nested:
                close()
            while stack and stack[-1][0] >= b.heading_level:
                stack.pop()
            stack.append((b.heading_level, b.heading_text))
            crumb = _crumb(stack)
            cur = (cur[0], b.end) if nested and cur is not None else (b.start, b.end)
            body = False
            continue
        for s, e in _split_block(lines, b, target_chars):
            body = True
            if cur is not None:
                size = sum(len(lines[i]) + 1 for i in range(cur[0], e + 1))
                if size <= target_chars:
                    cur = (cur[0], e)
                    continue
                close()
            cur = (s, e)
    close()
    return pieces
