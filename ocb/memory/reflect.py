"""Reflect: rewrite the Summary section of entity pages and move opinion confidence
with new evidence. Reflect writes only under ``<workspace>/bank/``.

A run picks the *priority* facts: current facts recalled since the window start, or
with salience above 0.8. The S bullets of ``bank/entities/`` pages are left out,
because those are the summaries. Then:

- for every entity of a priority fact, it writes the ``## Summary`` section of
  ``bank/entities/<Name>.md``: one ``- S @Name: ...`` bullet made from the entity's top
  5 current non-S facts, and an indented ``  - sources:`` line with their links;
- for every opinion on ``bank/opinions.md`` that shares an entity with the priority
  facts, it judges the current B/W facts about the opinion's entities that share its
  terms and that it has not used yet. Each piece moves ``O(c=...)`` by 0.05 x the
  fact's salience. A run moves it at most 0.10, or 0.25 when 3 or more strong pieces
  agree. The pieces' links are added to the opinion's ``  - evidence:`` line.

``decide_reflect`` is pure: texts go in, the file writes and the ``ReflectRan`` event
come out. The links it writes already point to where the facts will be after its own
edits, so deciding again right after applying a decision gives nothing.

NOTE: reflect must never write outside ``bank/``. ``reflect`` checks every path
before it writes anything (``ocb.memory.bank.write_pages``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import msgspec

from ocb.engine.dates import since_window
from ocb.graph.sync import sync
from ocb.memory.bank import ENTITIES, OPINIONS, FileWrite, aliases, bank_texts, write_pages
from ocb.redaction import redact_input
from ocb.settings import actor_of
from ocb.store import Store
from ocb_events.errors import InputError, OcbError, WorkspaceError
from ocb_events.schema import ReflectChange, ReflectRan
from projections.memory import Fact, State as MemoryState
from replay.timetravel import iso
from workspace_sync.facts import FACT_HEAD
from workspace_sync.markdown import FENCE, HEADING
from workspace_sync.retain import entity_tag
from workspace_sync.text import terms

Summarize = Callable[[str, Sequence[Fact]], str]
"""``summarize(entity name, its top facts) -> summary text`` (one line)."""
Judge = Callable[[str, str], int]
"""``judge(opinion text, fact text)``: +1 supports, -1 contradicts, 0 neither."""

TOP_FACTS = 5
STEP = 0.05  # confidence moved per piece of evidence, times its salience
CAP, STRONG_CAP, STRONG = 0.10, 0.25, 0.8
LOW, HIGH = 0.02, 0.98
COMMENT = "<!-- reflect writes the Summary section; edit the other sections freely -->"

_NEG = re.compile(r"\b(?:not|no|never|stopped|dislikes|hates)\b|n['\u2019]t\b", re.IGNORECASE)
_EOL = re.compile(r"\r\n|\r|\n")
_BULLET = re.compile(r"^( ?[-*+]\s+)(.*)$")
_CPARAM = re.compile(r"((?:^|[(,])\s*c\s*=\s*)[^,)\s]+")
_EVIDENCE = re.compile(r"^(?:\s{2,}|\t)\s*(?:[-*+]\s+)?(?:evidence|sources?)\s*:", re.IGNORECASE)
_LINK = re.compile(r"[\w./\-]+\.md#L\d+(?:-L\d+)?")
_UNSAFE = re.compile(r'^\.|[/\\:*?"<>|]')

# per file: (first 0-based line whose start moves, first whose end moves, lines added)
Shifts = dict[str, list[tuple[int, int, int]]]


class ReflectItem(msgspec.Struct, frozen=True):
    """One change reflect made. ``change`` is ``entity_summary`` (subject: the entity;
    before/after: the old/new summary text) or ``opinion_confidence`` (subject: the
    opinion's fact id; before/after: confidences like ``0.60``). ``supporting`` and
    ``contradicting`` are fact ids. ``sources`` are the links written: a summary's
    sources, or the evidence added to an opinion."""

    path: str
    change: str
    subject: str
    before: str
    after: str
    supporting: tuple[str, ...] = ()
    contradicting: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()


class ReflectPlan(msgspec.Struct, frozen=True):
    """What a reflect run decided: the priority fact ids, the files to write, the
    changes, and the event to record (None when nothing changes)."""

    priority: tuple[str, ...]
    writes: tuple[FileWrite, ...]
    items: tuple[ReflectItem, ...]
    event: ReflectRan | None


class ReflectReport(msgspec.Struct):
    """What reflect did: the seq of its ``reflect_ran`` record (0: nothing changed),
    the window start (ns and ISO), the priority fact ids, the changes and the files
    written (relative to the workspace)."""

    seq: int
    since_ns: int
    since: str
    priority: list[str]
    changes: list[ReflectItem]
    written: list[str]


# --------------------------------------------------------------------------- text helpers


def _split(text: str) -> list[str]:
    """Lines with their endings, numbered as ``split_lines`` numbers them."""
    out, pos = [], 0
    for m in _EOL.finditer(text):
        out.append(text[pos : m.end()])
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def _eol(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _round2(x: float) -> float:
    return float(Decimal(repr(round(x, 9))).quantize(Decimal("0.01"), ROUND_HALF_UP))


def _where(f: Fact, shifts: Shifts) -> str:
    """``path#L`` of a fact once the planned edits are written."""
    sh = shifts.get(f.path, ())
    s = f.start_line + sum(d for ts, _, d in sh if f.start_line - 1 >= ts)
    e = f.end_line + sum(d for _, te, d in sh if f.end_line - 1 >= te)
    return f"{f.path}#L{s}" if s == e else f"{f.path}#L{s}-L{e}"


def _keys(f: Fact) -> set[str]:
    return {e.lower() for e in f.entities}


def _current(mem: MemoryState) -> list[Fact]:
    return [mem.facts[i] for path in sorted(mem.files) for i in mem.files[path].ids]


def priority_facts(mem: MemoryState, since_ns: int, now_ns: int) -> list[Fact]:
    """Current facts recalled in ``[since_ns, now_ns]`` or with salience above 0.8,
    without the S facts of entity pages; sorted by id."""
    out = []
    for f in _current(mem):
        if f.kind == "S" and f.path.startswith(ENTITIES):
            continue
        a = mem.access.get(f.id)
        if f.salience > 0.8 or (a is not None and since_ns <= a.last_ns <= now_ns):
            out.append(f)
    return sorted(out, key=lambda f: f.id)


# --------------------------------------------------------------------------- opinions


def default_judge(opinion: str, fact: str) -> int:
    """-1 (contradicts) when exactly one of the two texts is negated ("not", "no",
    "never", "no longer", "stopped", "n't", "dislikes", "hates"), else +1 (supports)."""
    return -1 if bool(_NEG.search(opinion)) != bool(_NEG.search(fact)) else 1


def related(opinion: Fact, fact: Fact) -> bool:
    """Whether ``fact`` is about ``opinion``: a shared entity, and 2 or more shared
    content terms or a term Jaccard of 0.2 or more (entity names do not count)."""
    if not _keys(opinion) & _keys(fact):
        return False
    names = {t for e in (*opinion.entities, *fact.entities) for t in terms(e)}
    a, b = set(terms(opinion.content)) - names, set(terms(fact.content)) - names
    shared = len(a & b)
    return shared >= 2 or (bool(a | b) and shared / len(a | b) >= 0.2)


def move_confidence(old: float, pieces: Sequence[tuple[int, float]]) -> float:
    """The new confidence after ``(sign, salience)`` pieces of evidence: 0.05 x
    salience each, at most 0.10 in all (0.25 when 3 or more pieces of salience 0.8 or
    more all point the same way). The result stays in [0.02, 0.98] and is rounded to
    2 decimals.

    Example:
        >>> move_confidence(0.6, [(1, 0.6)])
        0.63
    """
    raw = sum(sign * STEP * sal for sign, sal in pieces)
    up = sum(1 for s, x in pieces if s > 0 and x >= STRONG)
    down = sum(1 for s, x in pieces if s < 0 and x >= STRONG)
    strong = (up >= 3 and not down and raw > 0) or (down >= 3 and not up and raw < 0)
    cap = STRONG_CAP if strong else CAP
    new = old + max(-cap, min(cap, raw))
    new = min(new, max(old, HIGH)) if raw > 0 else max(new, min(old, LOW))
    return _round2(new)


class _Opinion(msgspec.Struct):
    fact: Fact
    pieces: list[tuple[int, Fact]]
    confidence: float
    evidence_line: int  # 0-based line of its evidence line, -1: none (one is inserted)


def _judged(mem: MemoryState, op: Fact, judge: Judge) -> list[tuple[int, Fact]]:
    used = set(mem.applied.get(op.id, ()))
    ids = sorted({i for k in _keys(op) if k in mem.entities for i in mem.entities[k].facts})
    out = []
    for fid in ids:
        f = mem.active(fid)
        if f is None or f.kind not in ("B", "W") or fid in used or not related(op, f):
            continue
        sign = judge(op.content, f.content)
        if sign:
            out.append((1 if sign > 0 else -1, f))
    return out


def _opinions(mem: MemoryState, text: str | None, keys: set[str], judge: Judge) -> list[_Opinion]:
    """The opinions whose confidence this run moves, in line order."""
    ff = mem.files.get(OPINIONS)
    if ff is None or text is None:
        return []
    if _hash(text) != ff.content_hash:
        raise WorkspaceError(
            f"{OPINIONS} changed since the brain last read it; nothing was written",
            "run ocb reflect again",
        )
    lines = _split(text)
    out = []
    for fid in ff.ids:
        op = mem.facts[fid]
        if op.kind != "O" or not keys & _keys(op):
            continue
        pieces = _judged(mem, op, judge)
        if not pieces:
            continue
        new = move_confidence(op.confidence, [(s, f.salience) for s, f in pieces])
        span = range(op.start_line, op.end_line)  # continuation lines, 0-based
        ev = next((i for i in span if _EVIDENCE.match(lines[i])), -1)
        out.append(_Opinion(op, pieces, new, ev))
    return out


def _rewrite_head(line: str, confidence: float) -> str:
    """An opinion bullet's line with ``O(c=...)`` set (inserted when it has no kind)."""
    eol = _eol(line)
    m = _BULLET.match(line[: len(line) - len(eol)])
    assert m is not None, "an opinion starts with a bullet"
    marker, body = m[1], m[2]
    c = f"{confidence:.2f}"
    h = FACT_HEAD.match(body)
    if h is None or h[1] != "O":
        return f"{marker}O(c={c}) {body}{eol}"
    params = h[2]
    if _CPARAM.search(params):
        params = _CPARAM.sub(lambda p: p[1] + c, params, count=1)
    else:
        params = f"(c={c}){params}"
    return f"{marker}O{params}{body[h.end() :]}{eol}"


def _opinion_edit(
    text: str, moves: list[_Opinion], shifts: Shifts
) -> tuple[str, list[ReflectItem]]:
    lines, nl = _split(text), _newline(text)
    after: dict[int, str] = {}
    items = []
    for mv in moves:
        op = mv.fact
        lines[op.start_line - 1] = _rewrite_head(lines[op.start_line - 1], mv.confidence)
        ordered = sorted(mv.pieces, key=lambda p: (p[1].path, p[1].start_line, p[1].id))
        links = list(dict.fromkeys(_where(f, shifts) for _, f in ordered))
        if mv.evidence_line >= 0:
            line = lines[mv.evidence_line]
            eol, body = _eol(line), line.rstrip("\r\n")
            have = set(_LINK.findall(body))
            new = [x for x in links if x not in have]
            if new:
                sep = ", " if have else " "
                lines[mv.evidence_line] = body.rstrip() + sep + ", ".join(new) + eol
        else:
            after[op.end_line - 1] = f"  - evidence: {', '.join(links)}{nl}"
        sup = tuple(sorted(f.id for s, f in mv.pieces if s > 0))
        con = tuple(sorted(f.id for s, f in mv.pieces if s < 0))
        before, after_c = f"{op.confidence:.2f}", f"{mv.confidence:.2f}"
        change = "opinion_confidence"
        items.append(ReflectItem(OPINIONS, change, op.id, before, after_c, sup, con, tuple(links)))
    out: list[str] = []
    for i, line in enumerate(lines):
        out.append(line)
        if i in after:
            if not _eol(line):
                out[-1] += nl
            out.append(after[i])
    return "".join(out), items


# --------------------------------------------------------------------------- entity pages


class _Page(msgspec.Struct):
    """Where an entity page's Summary section goes: lines ``[start, end)`` of ``lines``
    are replaced by the section (with its heading when ``heading``, a blank line before
    when ``lead`` and after when ``trail``)."""

    key: str
    name: str
    path: str
    before: str | None
    lines: list[str]
    start: int
    end: int
    heading: bool
    lead: bool
    trail: bool
    facts: list[Fact] = msgspec.field(default_factory=list)
    text: str = ""

    @property
    def size(self) -> int:
        return int(self.lead) + int(self.heading) + 2 + int(self.trail)


def _headings(lines: Sequence[str]) -> list[tuple[int, int, str]]:
    """(0-based line, level, text) of the headings outside fenced code."""
    out, fence = [], False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            fence = not fence
        elif not fence and (h := HEADING.match(line.rstrip("\r\n"))):
            out.append((i, len(h[1]), h[2]))
    return out


def _layout(key: str, name: str, path: str, before: str | None) -> _Page:
    text = before if before is not None else f"# {name}\n\n{COMMENT}\n\n"
    lines = _split(text)
    heads = _headings(lines)
    for n, (i, level, title) in enumerate(heads):
        if level == 2 and title.strip().lower() == "summary":
            end = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
            return _Page(key, name, path, before, lines, i + 1, end, False, False, end < len(lines))
    at = len(lines)
    if heads and heads[0][1] == 1:
        at = heads[1][0] if len(heads) > 1 else len(lines)
    lead = at > 0 and bool(lines[at - 1].strip())
    return _Page(key, name, path, before, lines, at, at, True, lead, at < len(lines))


def _safe(name: str) -> bool:
    """Whether a name makes one plain file name under bank/entities/."""
    return bool(name.strip()) and name.isprintable() and not _UNSAFE.search(name)


def _sentence(content: str) -> str:
    s = " ".join(content.split())
    if s[:1].islower():
        s = s[0].upper() + s[1:]
    return s if s.endswith((".", "!", "?")) else s + "."


def _rank(f: Fact) -> tuple[float, int, int, str, int]:
    """Most salient first, then newest (its day, then when it was first recorded), then
    in file and line order. Nothing here may move when reflect applies its own edits:
    moving an opinion's confidence revises that fact, so ranking by the last revision
    would reorder the summary on the next run, and reflect would never settle."""
    return (-f.salience, -f.time_ns, -f.created_seq, f.path, f.start_line)


def _pages(
    mem: MemoryState,
    texts: Mapping[str, str | None],
    keys: Sequence[str],
    summarize: Summarize | None,
) -> list[_Page]:
    """The entity pages that get a summary, with their layout, facts and text."""
    existing = {p.lower(): p for p in texts if p.startswith(ENTITIES)}
    pages = []
    for key in keys:
        name = mem.entities[key].name
        path = existing.get(f"{ENTITIES}{name}.md".lower(), f"{ENTITIES}{name}.md")
        if not _safe(name) or (path in texts and texts[path] is None):
            continue
        page = _layout(key, name, path, texts.get(path))
        cands = []
        for fid in mem.entities[key].facts:
            f = mem.facts[fid]
            inside = f.path == path and page.start <= f.start_line - 1 < page.end
            if f.kind != "S" and not f.retired_seq and not inside:
                cands.append(f)
        cands.sort(key=_rank)
        page.facts = cands[:TOP_FACTS]
        if not page.facts:
            continue
        raw = summarize(name, page.facts) if summarize is not None else None
        page.text = " ".join(
            (raw if raw is not None else " ".join(_sentence(f.content) for f in page.facts)).split()
        )
        if page.text:
            pages.append(page)
    return pages


def _page_edit(page: _Page, shifts: Shifts) -> tuple[FileWrite, ReflectItem] | None:
    nl = _newline(page.before or "")
    links = [_where(f, shifts) for f in page.facts]
    body = [f"- S {entity_tag(page.name)}: {page.text}", f"  - sources: {', '.join(links)}"]
    region = (
        ([nl] if page.lead else [])
        + ([f"## Summary{nl}"] if page.heading else [])
        + [line + nl for line in body]
        + ([nl] if page.trail else [])
    )
    old = page.lines[page.start : page.end]
    if page.before is not None and "".join(old) == "".join(region):
        return None
    head = list(page.lines[: page.start])
    if head and not _eol(head[-1]):
        head[-1] += nl
    text = "".join(head + region + page.lines[page.end :])
    before = "\n".join(x.rstrip() for x in old).strip()
    ids = tuple(f.id for f in page.facts)
    after, sources = "\n".join(body), tuple(links)
    item = ReflectItem(page.path, "entity_summary", page.name, before, after, ids, (), sources)
    return FileWrite(page.path, page.before, text), item


# --------------------------------------------------------------------------- decide


def _shifts(
    pages: Sequence[_Page], moves: Sequence[_Opinion], aliases: Mapping[str, Sequence[str]]
) -> Shifts:
    """How the planned edits move the lines of each file (and of its aliases)."""
    shifts: Shifts = {}
    for p in pages:
        if p.before is not None and p.size != p.end - p.start:
            shifts.setdefault(p.path, []).append((p.end, p.end, p.size - (p.end - p.start)))
    for mv in moves:
        if mv.evidence_line < 0:
            shifts.setdefault(OPINIONS, []).append((mv.fact.end_line, mv.fact.end_line - 1, 1))
    for path in sorted(shifts):
        for other in aliases.get(path, ()):
            shifts[other] = shifts[path]
    return shifts


def decide_reflect(
    mem: MemoryState,
    files_text: Mapping[str, str | None],
    now_ns: int,
    since_ns: int,
    *,
    summarize: Summarize | None = None,
    judge: Judge | None = None,
    aliases: Mapping[str, Sequence[str]] | None = None,
) -> ReflectPlan:
    """Decide a reflect run without touching disk.

    Args:
        mem: the memory projection (its facts must match ``files_text``).
        files_text: workspace-relative path -> text of ``bank/opinions.md`` and the
            ``bank/entities/*.md`` pages that exist (None: exists but unreadable, and
            is left alone).
        now_ns: the time of the run; recalls after it do not count.
        since_ns: the window start; facts recalled since then are priority.
        summarize: replaces the default extractive summary text.
        judge: replaces the default negation judge.
        aliases: path -> the other paths of the same file (a symlink and its target
            are both read), so the links to them follow the planned edits too.

    Returns:
        The plan; its event is None (and it writes nothing) when nothing changes.

    Raises:
        WorkspaceError: ``bank/opinions.md`` differs from what the brain last read.
    """
    prio = priority_facts(mem, since_ns, now_ns)
    keys = sorted({k for f in prio for k in _keys(f) if k in mem.entities})
    pages = _pages(mem, files_text, keys, summarize)
    moves = _opinions(mem, files_text.get(OPINIONS), set(keys), judge or default_judge)
    shifts = _shifts(pages, moves, aliases or {})
    writes, items = [], []
    if moves:
        text = files_text[OPINIONS]
        assert text is not None
        new, got = _opinion_edit(text, moves, shifts)
        writes.append(FileWrite(OPINIONS, text, new))
        items.extend(got)
    for p in pages:
        edit = _page_edit(p, shifts)
        if edit is not None:
            writes.append(edit[0])
            items.append(edit[1])
    ids = tuple(f.id for f in prio)
    if not items:
        return ReflectPlan(ids, (), (), None)
    items.sort(key=lambda x: (x.path, x.change, x.subject))
    writes.sort(key=lambda w: w.path)
    fields = ReflectChange.__struct_fields__
    changes = tuple(ReflectChange(**{k: getattr(x, k) for k in fields}) for x in items)
    event = ReflectRan(since_ns=since_ns, priority=ids, changes=changes)
    return ReflectPlan(ids, tuple(writes), tuple(items), event)


# --------------------------------------------------------------------------- the command


def _redacted(store: Store, event: ReflectRan) -> ReflectRan:
    """The event with secrets taken out of the old and new texts it records (an old
    summary is read from the page on disk)."""
    scanner = store.secrets()

    def clean(c: ReflectChange) -> ReflectChange:
        what = f"reflect {c.path}"
        before, after = (redact_input(store.warn, scanner, what, t) for t in (c.before, c.after))
        return msgspec.structs.replace(c, before=before, after=after)

    return msgspec.structs.replace(event, changes=tuple(clean(c) for c in event.changes))


def reflect(
    store: Store,
    since: str = "7d",
    *,
    summarize: Summarize | None = None,
    judge: Judge | None = None,
    actor: str = "cli",
) -> ReflectReport:
    """Rewrite the summaries of the priority facts' entities and move the confidence
    of their opinions with new evidence (see the module docstring). The brain first
    catches up with the workspace. The files are written, then one ``reflect_ran``
    is recorded as ``actor``, then the workspace is synced with cause reflect.
    When nothing changes, nothing is written or recorded.

    Example:
        >>> reflect(brain, "7d").changes[0].change  # doctest: +SKIP
        'entity_summary'

    Raises:
        InputError: a bad ``since``, or the brain is opened as of a past point.
        WorkspaceError: the brain has no workspace, or a bank file changed meanwhile.
    """
    if store.as_of is not None:
        raise InputError(
            f"this brain is opened as of seq {store.as_of}; reflect writes files and records",
            "drop `as_of` to reflect",
            param="as_of",
        )
    now = store.clock()
    window = since_window(since, now)
    store.load("config", "graph", "vectors", "memory")
    if not store.workspace:
        raise WorkspaceError(
            "this brain has no workspace to reflect on",
            "index one first: ocb init --workspace DIR --brain B",
        )
    root = Path(store.workspace)
    sync(store, root, actor=actor)  # decide on the facts as the files are now
    plans: list[ReflectPlan] = []

    def decide(_seq: int) -> list[ReflectRan]:  # writes the pages it decides
        mem, texts = store.state("memory"), bank_texts(root)
        same = aliases(root, sorted({*mem.files, *texts}))
        plans.append(decide_reflect(
            mem, texts, now, window.start_ns, summarize=summarize, judge=judge, aliases=same
        ))  # fmt: skip
        if (event := plans[-1].event) is None:
            return []
        write_pages(root, plans[-1].writes)
        return [_redacted(store, event)]

    # attempts=1: a stale decision is refused, never made again over the pages it wrote
    recs = store.transact(actor_of(actor), decide, attempts=1)
    plan, recorded = plans[-1], recs[0].seq if recs else 0
    if recs:
        try:
            sync(store, root, cause="reflect", actor=actor)
        except OcbError as exc:  # the run is recorded: the pages' facts come next time
            store.warn(
                f"the bank pages are written but their facts are not recorded yet "
                f"({exc.message}); the next sync (ocb init) records them"
            )
    start, written = window.start_ns, [w.path for w in plan.writes]
    return ReflectReport(recorded, start, iso(start), [*plan.priority], [*plan.items], written)
