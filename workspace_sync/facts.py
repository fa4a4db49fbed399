"""Typed facts from Markdown: the bullets of ``## Retain`` sections and of ``bank/`` pages.

A fact bullet is ``- KIND[(c=0.9)][(s=0.8)] [@entity ...]: content`` where KIND is W
(world), B (experience), O (opinion, ``c`` its confidence) or S (summary) and ``s`` an
optional salience, both in [0, 1]; the values may also end the bullet (``... (s=0.9)``).
Who said it goes in the head too: ``by=assistant`` (or ``tool``; ``user`` when left
out) with the conversation's ``session`` (percent-encoded: ``,``, ``)``, ``@`` and
spaces never stand in it) and ``turn``, as in ``- B(by=assistant, session=s1, turn=3):
...``. What an assistant said is a claim: its confidence is ``CLAIM_CONFIDENCE`` unless
``c`` says otherwise.
``@name`` (or ``@[Two Words]``) anywhere in the bullet names an entity. Indented lines
under a bullet continue it; an indented ``evidence:`` (or ``sources:``) line lists
``path#L`` links instead. A daily log's file name (``memory/2026-11-20.md``) dates its
facts.

Pages under ``bank/`` are all facts (except under a ``History`` heading): a bullet
without a kind takes the page's (``world.md`` W, ``experience.md`` B, ``opinions.md`` O,
``entities/<Name>.md`` S about Name, any other page W). In a Retain section a bullet
without a known kind, or with a value out of range, is reported with its file and line
and skipped.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Mapping, Sequence
from urllib.parse import unquote

import msgspec

from ocb_events.schema import FactKind, FactSpec, FactsRecorded, Speaker
from workspace_sync.markdown import FENCE, HEADING, split_lines
from workspace_sync.scan import FileText
from workspace_sync.text import terms

KINDS: tuple[FactKind, ...] = ("W", "B", "O", "S")
SPEAKERS: tuple[Speaker, ...] = ("user", "assistant", "tool")
CLAIM_CONFIDENCE = 0.3
"""The confidence of a fact an assistant said (a claim) whose bullet gives none: below
what a user said or a tool returned, which stand as stated."""
RETAIN = re.compile(r"retain\b", re.IGNORECASE)
"""The text of a heading that opens a Retain section."""
_HISTORY = re.compile(r"history\b", re.IGNORECASE)
_BULLET = re.compile(r"^ ?[-*+]\s+(.*\S)\s*$")
_CONT = re.compile(r"^(?:\s{2,}|\t)\s*(?:[-*+]\s+)?(.*\S)\s*$")
_EVIDENCE = re.compile(r"^(?:evidence|sources?)\s*:\s*(.*)$", re.IGNORECASE)
FACT_HEAD = re.compile(r"^([A-Za-z])((?:\([^)]*\))*)(?=[\s:]|$)")
"""The head of a bullet body: a kind letter and its parenthesised values."""
_PARAM = re.compile(r"^\s*([a-z]+)\s*=\s*([^,\s]+)\s*$")
_MENTION = re.compile(r"@\[([^\]]+)\]|@([^\W_][\w\-./]*[^\W_]|[^\W_])")
_TRAIL = re.compile(r"\s*\(\s*([cs]\s*=\s*-?[0-9.]+(?:\s*,\s*[cs]\s*=\s*-?[0-9.]+)?)\s*\)\s*$")
_LINK = re.compile(r"[\w./\-]+\.md#L\d+(?:-L\d+)?")
_DAY = re.compile(r"(?:^|/)(\d{4})-(\d{2})-(\d{2})\.md$")
_SIGNALS = frozenset(
    terms(
        "decided decision agreed must never always important critical deadline leaving "
        "prefers promised urgent blocked broke outage fired hired launched"
    )
)
PAGE_KINDS: dict[str, FactKind] = {
    "bank/world.md": "W",
    "bank/experience.md": "B",
    "bank/opinions.md": "O",
}


class Problem(msgspec.Struct, frozen=True):
    """A bullet that was skipped: file, 1-based line and what is wrong with it."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def estimate_salience(kind: str, content: str, entities: Sequence[str]) -> float:
    """The deterministic default salience of a fact: 0.5 (summaries 0.4, opinions
    0.55), +0.1 when it names an entity, +0.15 for a decision, commitment or incident
    word, +0.05 when it holds a number; within [0.05, 0.95]."""
    s = {"S": 0.4, "O": 0.55}.get(kind, 0.5)
    if entities:
        s += 0.1
    if _SIGNALS.intersection(terms(content)):
        s += 0.15
    if any(ch.isdigit() for ch in content):
        s += 0.05
    return round(min(0.95, max(0.05, s)), 3)


def mentions(text: str) -> list[str]:
    """The @entities of ``text`` in order of first mention (first spelling kept)."""
    out: dict[str, str] = {}
    for m in _MENTION.finditer(text):
        name = (m.group(1) or m.group(2)).strip()
        if name and name.lower() not in out:
            out[name.lower()] = name
    return list(out.values())


def day_of(path: str) -> str | None:
    """The ISO day a daily log's name gives its facts; "" for other files and None
    for a name shaped like a date that is not one (``2026-13-45.md``)."""
    m = _DAY.search(path)
    if m is None:
        return ""
    try:
        return dt.date(int(m[1]), int(m[2]), int(m[3])).isoformat()
    except ValueError:
        return None


def page_default(path: str) -> tuple[FactKind, str] | None:
    """The kind (and entity) a bank page gives bullets without one; None outside bank/."""
    if not path.startswith("bank/"):
        return None
    if path.startswith("bank/entities/") and path.endswith(".md"):
        return "S", path[len("bank/entities/") : -3]
    return PAGE_KINDS.get(path, "W"), ""


def _param(key: str, raw: str) -> str | float | int | None:
    """The value of one head parameter, or None when it is not one."""
    if key == "by":
        return raw if raw in SPEAKERS else None
    if key == "session":
        return unquote(raw)
    if key == "turn":
        return int(raw) if raw.isdigit() else None
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


def _bad(key: str, raw: str) -> str:
    if key == "by":
        return f"by={raw} is not user, assistant or tool"
    if key == "turn":
        return f"turn={raw} is not a whole number"
    name = "confidence" if key == "c" else "salience"
    try:
        float(raw)
    except ValueError:
        return f"{key}={raw} is not a number"
    return f"{name} {key}={raw} is outside [0, 1]"


def _params(raw: str) -> dict[str, str | float | int] | str:
    out: dict[str, str | float | int] = {}
    for group in re.findall(r"\(([^)]*)\)", raw):
        for part in group.split(","):
            m = _PARAM.match(part)
            if not m or m[1] not in ("c", "s", "by", "session", "turn"):
                return (
                    f"unknown parameter '({group})' "
                    "(use c=0.9, s=0.8, by=assistant, session=ID or turn=3)"
                )
            value = _param(m[1], m[2])
            if value is None:
                return _bad(m[1], m[2])
            out[m[1]] = value
    return out


def _head(body: str, default: tuple[FactKind, str] | None) -> tuple[str, str, str] | str:
    """(kind, params, rest) of a bullet body, or a problem message."""
    m = FACT_HEAD.match(body)
    if m and m[1] in KINDS:
        return m[1], m[2], body[m.end() :]
    if default is not None:
        return default[0], "", body
    if m and m[1].isupper():
        return f"unknown kind '{m[1]}' (use W, B, O or S)"
    return "no kind (start the bullet with W, B, O or S, e.g. '- W @Alice: ...')"


def _content(rest: str) -> str:
    head, sep, tail = rest.partition(":")
    if sep and not _MENTION.sub("", head).strip():
        return tail.strip()
    return rest.strip().lstrip(":").strip()


def parse_bullet(
    path: str, lines: Sequence[str], start: int, end: int, day: str, in_bank: bool
) -> FactSpec | Problem:
    """The fact of the bullet on 0-based lines ``start..end`` (continuations included)."""
    default = page_default(path) if in_bank else None
    m = _BULLET.match(lines[start])
    assert m is not None
    head = _head(m[1], default)
    if isinstance(head, str):
        return Problem(path, start + 1, head)
    kind, raw_params, rest = head
    params = _params(raw_params)
    if isinstance(params, str):
        return Problem(path, start + 1, params)
    parts, evidence = [_content(rest)], []
    for line in lines[start + 1 : end + 1]:
        c = _CONT.match(line)
        if c is None:
            continue
        ev = _EVIDENCE.match(c[1])
        if ev:
            evidence.extend(_LINK.findall(ev[1]))
        else:
            parts.append(c[1])
    content = " ".join(p for p in parts if p)
    trail = _TRAIL.search(content)
    if trail:
        more = _params(f"({trail[1]})")
        if isinstance(more, str):
            return Problem(path, start + 1, more)
        params = {**more, **params}
        content = content[: trail.start()].rstrip()
    if not content:
        return Problem(path, start + 1, "empty fact (write its content after the colon)")
    names = mentions(" ".join([m[1], *parts]))
    if default is not None and default[1] and default[1].lower() not in {n.lower() for n in names}:
        names.append(default[1])
    entities = tuple(sorted(names, key=lambda n: (n.lower(), n)))
    raw = "\n".join(lines[start : end + 1])
    sal = float(params["s"]) if "s" in params else estimate_salience(kind, content, entities)
    speaker = str(params.get("by", "user"))
    unset = CLAIM_CONFIDENCE if speaker == "assistant" else 0.5 if kind == "O" else 0.0
    conf = float(params.get("c", unset))
    return FactSpec(
        id="",
        kind=kind,  # type: ignore[arg-type]
        content=content,
        entities=entities,
        start_line=start + 1,
        end_line=end + 1,
        text_hash=hashlib.blake2b(raw.encode(), digest_size=8).hexdigest(),
        salience=round(sal, 6),
        confidence=round(conf, 6),
        day=day,
        evidence=tuple(dict.fromkeys(evidence)),
        speaker=speaker,  # type: ignore[arg-type]
        session=str(params.get("session", "")),
        turn=int(params.get("turn", 0)),
    )


def _readable(lines: Sequence[str], in_bank: bool) -> list[bool]:
    """Which lines may hold facts: inside a Retain section, or anywhere on a bank page
    outside a History section; never inside fenced code or on a heading."""
    out = [False] * len(lines)
    level = skip = 0  # heading levels of the open Retain / History section (0: none)
    fence = False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            fence = not fence
            continue
        h = None if fence else HEADING.match(line)
        if h:
            n = len(h[1])
            level = 0 if level and n <= level else level
            skip = 0 if skip and n <= skip else skip
            if RETAIN.match(h[2]):
                level = n
            elif in_bank and _HISTORY.match(h[2]):
                skip = n
            continue
        out[i] = not fence and not skip and bool(level or in_bank)
    return out


def _bullet_spans(lines: Sequence[str], in_bank: bool) -> list[tuple[int, int]]:
    """0-based (start, end) of every fact bullet with its continuation lines."""
    spans: list[tuple[int, int]] = []
    open_ = False
    for i, ok in enumerate(_readable(lines, in_bank)):
        line = lines[i]
        if not ok:
            open_ = False
        elif _BULLET.match(line):
            spans.append((i, i))
            open_ = True
        elif open_ and line.strip() and _CONT.match(line):
            spans[-1] = (spans[-1][0], i)
        elif line.strip():
            open_ = False
    return spans


def parse_facts(path: str, text: str) -> tuple[list[FactSpec], list[Problem]]:
    """Every fact of a workspace file (ids are "" until ``assign_ids``), and the bullets
    that were skipped (with why).

    Example:
        >>> facts, _ = parse_facts("memory/2026-11-20.md", "## Retain\\n- W @Peter: likes tea\\n")
        >>> facts[0].kind, facts[0].entities, facts[0].day
        ('W', ('Peter',), '2026-11-20')
    """
    lines = split_lines(text)
    in_bank = page_default(path) is not None
    day = day_of(path)
    problems: list[Problem] = []
    if day is None:
        problems.append(Problem(path, 1, "the file name is not a valid date (YYYY-MM-DD.md)"))
        day = ""
    facts: list[FactSpec] = []
    for start, end in _bullet_spans(lines, in_bank):
        got = parse_bullet(path, lines, start, end, "" if in_bank else day, in_bank)
        (facts if isinstance(got, FactSpec) else problems).append(got)  # type: ignore[arg-type]
    return facts, problems


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _jaccard(a: str, b: str) -> float:
    x, y = set(terms(a)), set(terms(b))
    return len(x & y) / len(x | y) if x | y else 0.0


def _same(p: FactSpec, f: FactSpec, by_text: bool) -> bool:
    if by_text:
        return p.text_hash == f.text_hash
    return p.kind == f.kind and _norm(p.content) == _norm(f.content)


def assign_ids(
    previous: Sequence[FactSpec], parsed: Sequence[FactSpec], next_id: int
) -> tuple[tuple[FactSpec, ...], int]:
    """Ids for the facts of a file: the same bullet (moved or not) keeps its id; an
    edited bullet (same kind and content with other values, or a similar content)
    is a revision of its fact; the rest are new facts ``f<next_id>``, ``f<next_id+1>`` ..."""
    ids: list[str | None] = [None] * len(parsed)
    free = list(previous)
    for by_text in (True, False):
        for i, p in enumerate(parsed):
            if ids[i] is None:
                for j, f in enumerate(free):
                    if _same(p, f, by_text):
                        ids[i] = f.id
                        del free[j]
                        break
    pairs = sorted(
        (-_jaccard(p.content, f.content), i, j)
        for i, p in enumerate(parsed)
        if ids[i] is None
        for j, f in enumerate(free)
        if p.kind == f.kind
    )
    used: set[int] = set()
    for score, i, j in pairs:
        if -score >= 0.5 and ids[i] is None and j not in used:
            ids[i] = free[j].id
            used.add(j)
    out = []
    for i, p in enumerate(parsed):
        fid = ids[i]
        if fid is None:
            fid, next_id = f"f{next_id}", next_id + 1
        out.append(msgspec.structs.replace(p, id=fid))
    return tuple(out), next_id


class PreviousFacts(msgspec.Struct, frozen=True):
    """What the brain holds of a file's facts: the content hash they were read from
    and the current facts, in line order."""

    content_hash: str
    facts: tuple[FactSpec, ...]


def diff_facts(
    files: Sequence[FileText],
    previous: Mapping[str, PreviousFacts],
    next_id: int,
    *,
    changed: frozenset[str] = frozenset(),
    keep: frozenset[str] = frozenset(),
    cause: str = "sync",
) -> tuple[list[FactsRecorded], list[Problem]]:
    """``facts_recorded`` events for the Markdown files whose facts may have changed:
    files whose content differs from what their facts were read from, files in
    ``changed`` (new or edited this sync) and, while the brain holds no facts at all,
    every file. A file that has no facts and never had any records nothing; a file
    that is gone (and not in ``keep``) retires its facts."""
    events: list[FactsRecorded] = []
    problems: list[Problem] = []
    seen = set()
    for f in files:
        seen.add(f.path)
        if not f.markdown:
            continue
        prev = previous.get(f.path)
        if prev is not None and prev.content_hash == f.content_hash:
            continue
        if prev is None and previous and f.path not in changed:
            continue
        parsed, bad = parse_facts(f.path, f.text)
        problems.extend(bad)
        if not parsed and prev is None:
            continue
        specs, next_id = assign_ids(prev.facts if prev else (), parsed, next_id)
        events.append(
            FactsRecorded(path=f.path, content_hash=f.content_hash, facts=specs, cause=cause)
        )
    for path in sorted(previous):
        if path not in seen and path not in keep:
            events.append(FactsRecorded(path=path, content_hash="", cause=cause))
    return events, problems
