"""Compacting old daily notes, decided from texts alone (no clock, no model, no I/O).

A daily note (a file named by its date, ``memory/2026-11-03.md``, outside ``bank/``)
whose day ended before the cutoff is turned into a short summary, and its facts move,
verbatim, to the bank pages they belong to:

- a fact bullet of a ``## Retain`` section (with its continuation lines) goes to the
  page of the first of its entities that has one (``bank/entities/<Name>.md``), else to
  its kind's page: W ``bank/world.md``, B and S ``bank/experience.md``, O
  ``bank/opinions.md``;
- lines someone said (``- 13:56 Caroline: ...``, or ``- Caroline: ...`` when Caroline
  has a page) go, as runs of
  adjacent lines, to that person's page, ``bank/entities/Caroline.md``; a dialogue (a
  run of several speakers) goes whole, in order, to the page of the conversation
  between them, ``bank/conversations/Caroline - Melanie.md`` (pages are created when
  missing).

On each page the moved lines of one note follow a heading ``## From <note path>`` (so
their chunks keep the note's day), appended at the end, notes in path order. The note
keeps its title, gets a ``## Summary`` (one bullet per section: its heading and the
first sentence of its text, with how many lines moved where) and a ``## Compacted``
section naming the pages and the command that prints the full old text from the log.

The decision is a fixed point: a note that already has a ``## Compacted`` heading is
never compacted again, and a page that already has a note's ``From`` heading (written
before a crash) does not get that note's lines twice.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence

import msgspec

from workspace_sync.facts import day_of, parse_facts
from workspace_sync.markdown import FENCE, HEADING, split_lines

__all__ = [
    "COMPACTED",
    "Compaction",
    "Edit",
    "Move",
    "daily_day",
    "is_compacted",
    "plan_compaction",
]

COMPACTED = "## Compacted"
"""The heading that marks a compacted note (it is never compacted again)."""
KIND_PAGES = {
    "W": "bank/world.md",
    "B": "bank/experience.md",
    "S": "bank/experience.md",
    "O": "bank/opinions.md",
}
_TITLES = {
    "bank/world.md": "World",
    "bank/experience.md": "Experience",
    "bank/opinions.md": "Opinions",
}
SPEAKER = re.compile(r"^ ?[-*+]\s+(\d{1,2}:\d{2}\s+)?([A-Z][\w'-]*(?: [A-Z][\w'-]*){0,2}):\s+\S")
"""A line someone said: a bullet ``HH:MM Name: text`` (a name of one to three words), or
``Name: text`` when Name has a page (so ``- TODO: ...`` is not someone)."""
_CONT = re.compile(r"^(?:\s{2,}|\t)\S")
_SENTENCE = re.compile(r"^(.+?[.!?])(?:\s|$)")
_SUMMARY_CHARS = 160


class Move(msgspec.Struct, frozen=True):
    """Lines that moved: from ``source`` (``note#Lstart-Lend`` in the old note) to
    ``target`` (``page#Lstart-Lend`` in the new page)."""

    source: str
    target: str


class Edit(msgspec.Struct, frozen=True):
    """A file's new text, and its text before (None: a new file)."""

    path: str
    before: str | None
    after: str


class Compaction(msgspec.Struct, frozen=True):
    """What compacting decided: the seq named as holding the old texts, the notes
    compacted, the file edits (pages first, then
    notes, each in path order), every move, and the lines of the notes that only the
    summary (and the log) keep."""

    as_of: int = 0
    notes: tuple[str, ...] = ()
    edits: tuple[Edit, ...] = ()
    moves: tuple[Move, ...] = ()
    summarized_lines: int = 0


def daily_day(path: str) -> dt.date | None:
    """The day a daily note is named by (None: not a daily note, or under ``bank/``)."""
    if path.startswith("bank/") or not path.endswith(".md"):
        return None
    day = day_of(path)
    return dt.date.fromisoformat(day) if day else None


def is_compacted(text: str) -> bool:
    """Whether a note was compacted already (it has the ``## Compacted`` heading)."""
    return any(line.rstrip() == COMPACTED for line in split_lines(text))


def _entity_page(name: str) -> str | None:
    """``bank/entities/<name>.md``, when ``name`` makes one plain file name."""
    if not name or name.startswith(".") or any(c in name for c in '/\\:*?"<>|'):
        return None
    return f"bank/entities/{name}.md"


class _Block(msgspec.Struct):
    start: int  # 0-based, inclusive
    end: int
    page: str


def _fact_blocks(path: str, text: str, pages: Mapping[str, object]) -> list[_Block]:
    """The Retain fact bullets of a note, each with the page it belongs to."""
    facts, _ = parse_facts(path, text)
    out = []
    for f in facts:
        page = next(
            (p for e in f.entities if (p := _entity_page(e) or "") and p in pages),
            KIND_PAGES[f.kind],
        )
        out.append(_Block(f.start_line - 1, f.end_line - 1, page))
    return out


def _said_blocks(lines: list[str], taken: set[int], pages: Mapping[str, object]) -> list[_Block]:
    """The lines someone said (outside fenced code), with their continuation lines, as
    runs of adjacent lines: a run of one person goes to that person's page, a dialogue
    (a run of several) to the page of the conversation between them."""
    said: list[tuple[int, int, str]] = []
    fence = False
    i = 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            fence = not fence
        m = None if fence or i in taken else SPEAKER.match(lines[i])
        page = _entity_page(m[2]) if m else None
        if m is None or page is None or not (m[1] or page in pages):
            i += 1
            continue
        end = i
        while end + 1 < len(lines) and end + 1 not in taken and _CONT.match(lines[end + 1]):
            end += 1
        said.append((i, end, m[2]))
        i = end + 1
    runs: list[tuple[int, int, list[str]]] = []
    for start, end, who in said:
        if runs and runs[-1][1] + 1 == start:
            runs[-1] = (runs[-1][0], end, [*runs[-1][2], who])
        else:
            runs.append((start, end, [who]))
    return [_Block(a, b, _said_page(who)) for a, b, who in runs]


def _said_page(speakers: list[str]) -> str:
    names = sorted(set(speakers), key=lambda n: (n.lower(), n))
    if len(names) == 1:
        return f"bank/entities/{names[0]}.md"
    return f"bank/conversations/{' - '.join(names)}.md"


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    m = _SENTENCE.match(text)
    s = m[1] if m else text
    if len(s) > _SUMMARY_CHARS:
        s = s[:_SUMMARY_CHARS].rsplit(" ", 1)[0] + " ..."
    return s


class _Section(msgspec.Struct):
    heading: str
    text: list[str] = msgspec.field(default_factory=list)
    moved: dict[str, int] = msgspec.field(default_factory=dict)


def _summary(lines: list[str], moved: dict[int, str], title: int | None) -> tuple[list[str], int]:
    """The note's summary bullets, and how many of its lines only the summary keeps."""
    sections = [_Section("")]
    left = 0
    for i, line in enumerate(lines):
        h = HEADING.match(line)
        if i == title:
            continue
        if h:
            sections.append(_Section(h[2]))
        elif i in moved:
            sec = sections[-1]
            sec.moved[moved[i]] = sec.moved.get(moved[i], 0) + 1
        elif line.strip():
            left += 1
            body = line.strip().lstrip("-*+ ").strip()
            if body and not FENCE.match(line):
                sections[-1].text.append(body)
    out = []
    for sec in sections:
        parts = [_first_sentence(sec.text[0])] if sec.text else []
        if sec.moved:
            n = sum(sec.moved.values())
            where = ", ".join(sorted(sec.moved))
            parts.append(f"({n} line{'s' if n != 1 else ''} moved to {where})")
        if parts:
            head = f"{sec.heading}: " if sec.heading else ""
            out.append(f"- {head}{' '.join(parts)}")
    return out, left


def _note_text(
    path: str, lines: list[str], moved: dict[int, str], as_of: int, given: Sequence[str] | None
) -> tuple[str, int]:
    """The compacted note: its title, summary and the Compacted section."""
    title = 0 if lines and (h := HEADING.match(lines[0])) and len(h[1]) == 1 else None
    head = lines[0] if title is not None else f"# {day_of(path)}"
    bullets, left = _summary(lines, moved, title)
    if given is not None and _bullets(given):
        bullets = _bullets(given)
    out = [head, "", "## Summary", "", *(bullets or ["- (empty)"]), "", COMPACTED, ""]
    out.append(f"The full text is in the brain's log: `ocb show {path} --as-of {as_of}`.")
    return "\n".join(out) + "\n", left


def _page_start(page: str, before: str | None) -> str:
    if before is None:
        name = page.rsplit("/", 1)[-1].removesuffix(".md")
        return f"# {_TITLES.get(page, name)}\n"
    return before if before.endswith("\n") or not before else before + "\n"


def _bullets(given: Sequence[str]) -> list[str]:
    """An extractor's summary lines as bullets (headings and blank lines left out, so
    a summary never opens a Retain or Compacted section)."""
    out = []
    for line in given:
        body = line.strip()
        if body and not HEADING.match(body) and not FENCE.match(body):
            out.append(body if body[:2] in ("- ", "* ", "+ ") else f"- {body}")
    return out


def plan_compaction(
    texts: Mapping[str, str],
    cutoff: dt.date,
    *,
    as_of: int,
    refused: frozenset[str] = frozenset(),
    summaries: Mapping[str, Sequence[str]] | None = None,
) -> Compaction:
    """Compact every daily note of ``texts`` (workspace-relative path -> text) whose
    day ended on or before ``cutoff``'s start (its day is before ``cutoff``), but those
    already compacted and those in ``refused``. ``as_of`` is the seq whose state holds
    the notes' old texts (named in each compacted note); ``summaries`` gives a note's
    summary lines (an extractor's) in place of the extractive one.

    Example:
        >>> note = {"memory/2026-01-02.md": "# 2026-01-02\\n\\n- 09:00 Ann: hi there all\\n"}
        >>> c = plan_compaction(note, dt.date(2026, 2, 1), as_of=7)
        >>> [e.path for e in c.edits], c.moves[0].source
        (['bank/entities/Ann.md', 'memory/2026-01-02.md'], 'memory/2026-01-02.md#L3-L3')
    """
    notes = sorted(
        p
        for p, t in texts.items()
        if (d := daily_day(p)) is not None and d < cutoff and p not in refused
        if not is_compacted(t)
    )
    pages: dict[str, list[str]] = {
        p: split_lines(t) for p, t in texts.items() if p.startswith("bank/")
    }
    added: dict[str, list[tuple[str, list[tuple[int, int, list[str]]]]]] = {}
    note_edits, moves_from = [], {}
    left = 0
    for path in notes:
        text = texts[path]
        lines = split_lines(text)
        blocks = _fact_blocks(path, text, pages)
        taken = {i for b in blocks for i in range(b.start, b.end + 1)}
        blocks = sorted(blocks + _said_blocks(lines, taken, pages), key=lambda b: b.start)
        moved = {i: b.page for b in blocks for i in range(b.start, b.end + 1)}
        for b in blocks:
            per = added.setdefault(b.page, [])
            if not per or per[-1][0] != path:
                per.append((path, []))
            per[-1][1].append((b.start, b.end, lines[b.start : b.end + 1]))
        given = summaries.get(path) if summaries is not None else None
        after, n = _note_text(path, lines, moved, as_of, given)
        left += n
        note_edits.append(Edit(path, text, after))
        moves_from[path] = blocks
    page_edits, moves = [], []
    for page in sorted(added):
        before = texts.get(page)
        out = split_lines(_page_start(page, before))
        for path, spans in added[page]:
            heading = f"## From {path}"
            present = heading in out  # written before a crash: not twice
            if present:
                line = out.index(heading) + 3
            else:
                out += ["", heading, ""]
                line = len(out) + 1
            for start, end, block in spans:
                if not present:
                    out += block
                source = f"{path}#L{start + 1}-L{end + 1}"
                moves.append(Move(source, f"{page}#L{line}-L{line + len(block) - 1}"))
                line += len(block)
        page_edits.append(Edit(page, before, "\n".join(out) + "\n"))
    return Compaction(
        as_of=as_of,
        notes=tuple(notes),
        edits=tuple(page_edits + note_edits),
        moves=tuple(moves),
        summarized_lines=left,
    )
