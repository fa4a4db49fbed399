"""Writing a retained fact into a daily log: the bullet, and where it goes.

The edit only ever inserts lines: the bullet goes after the last bullet of the log's
first ``## Retain`` section, or into a new section at the end of the file (a new file
starts with a ``# YYYY-MM-DD`` title). No other line of the file changes, except that
a last line without a newline gets one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import quote

from workspace_sync.facts import RETAIN, mentions
from workspace_sync.markdown import HEADING, split_lines

_SIMPLE = re.compile(r"^[^\W_][\w\-./]*[^\W_]$|^[^\W_]$")


def entity_tag(name: str) -> str:
    """``@name``, or ``@[Two Words]`` when the name is not one word."""
    return f"@{name}" if _SIMPLE.match(name) else f"@[{name}]"


def format_bullet(
    kind: str,
    content: str,
    entities: Sequence[str] = (),
    *,
    salience: float | None = None,
    confidence: float | None = None,
    speaker: str = "user",
    session: str = "",
    turn: int = 0,
) -> str:
    """The Markdown bullet of a fact, e.g. ``- O(c=0.8) @Peter: prefers tea``, with who
    said it when it was not the user (``- B(by=assistant, session=s1, turn=3): ...``;
    the session percent-encoded so that it reads back as given). Entities the content
    already mentions are not repeated in the head."""
    params = []
    if speaker != "user":
        params.append(f"by={speaker}")
    if session:
        params.append(f"session={quote(session, safe=':/._-')}")
    if turn:
        params.append(f"turn={turn}")
    if confidence is not None:
        params.append(f"c={confidence:g}")
    if salience is not None:
        params.append(f"s={salience:g}")
    head = kind + (f"({', '.join(params)})" if params else "")
    said = {m.lower() for m in mentions(content)}
    tags = [entity_tag(e) for e in entities if e.lower() not in said]
    content = " ".join(content.split())
    return f"- {head}{''.join(' ' + t for t in tags)}: {content}"


def insert_retained(text: str | None, bullet: str, day: str) -> tuple[str, int]:
    """The daily log with ``bullet`` added, and the bullet's 1-based line.

    Example:
        >>> insert_retained(None, "- W: x", "2026-11-22")
        ('# 2026-11-22\\n\\n## Retain\\n- W: x\\n', 4)
    """
    if text is None or not text.strip():
        head = f"# {day}\n\n## Retain\n"
        return head + bullet + "\n", 4
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = split_lines(text)
    at = _retain_end(lines)
    body = text if text.endswith(("\n", "\r")) else text + newline
    if at is None:
        sep = "" if not lines[-1].strip() else newline
        return f"{body}{sep}## Retain{newline}{bullet}{newline}", len(lines) + (3 if sep else 2)
    kept = body.splitlines(keepends=True)
    kept.insert(at, bullet + newline)
    return "".join(kept), at + 1


def _retain_end(lines: Sequence[str]) -> int | None:
    """0-based index to insert at: after the last non-blank line of the first Retain
    section, or None when the file has none."""
    level = 0
    last = -1
    for i, line in enumerate(lines):
        h = HEADING.match(line)
        if h:
            n = len(h[1])
            if level and n <= level:
                return last + 1
            if not level and RETAIN.match(h[2]):
                level, last = n, i
            continue
        if level and line.strip():
            last = i
    return last + 1 if level else None
