"""Typed memory on a brain: retain (write a fact into today's daily log and record it)
and recall (filters, scores, associative spreading; every recall is a trace that
resets its facts' access decay). ``Brain.retain`` and ``Brain.recall`` call these."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec

from ocb.engine.dates import (
    DatePhrase,
    Window,
    between_window,
    date_in_query,
    since_window,
    today,
)
from ocb.engine.embed import Embedder
from ocb.engine.search import SearchIndex
from ocb.graph.sync import sync
from ocb.memory.recall import FactIndex, RecallItem, RecallRequest, decide_recall
from ocb.redaction import redact_input, redact_key, warn_file
from ocb.settings import Indexing, Memory, resolve
from ocb.store import Store
from ocb_events.errors import InputError, OcbError, WorkspaceError, unknown
from projections.memory import Fact, State as MemoryState, norm
from workspace_sync import (
    Skipped,
    format_bullet,
    insert_retained,
    read_text,
    writable_target,
    write_workspace_file,
)
from workspace_sync.facts import SPEAKERS
from workspace_sync.secrets import Finding

KIND_NAMES = {"W": "world", "B": "experience", "O": "opinion", "S": "summary"}


def check_kind(kind: str) -> str:
    """A fact kind, upper-cased.

    Raises:
        InputError: not W, B, O or S.
    """
    k = kind.strip().upper()
    if k not in KIND_NAMES:
        raise InputError(
            f"unknown fact kind {kind!r}",
            "use W (world), B (experience), O (opinion) or S (summary)",
        )
    return k


def check_fraction(name: str, value: float | None) -> None:
    """Raises InputError when ``value`` is outside [0, 1]."""
    if value is not None and not 0.0 <= value <= 1.0:
        raise InputError(f"{name} {value:g} is outside [0, 1]", f"give a {name} from 0 to 1")


def entity_names(names: list[str] | None) -> list[str]:
    """Entity names as given (without a leading ``@``).

    Raises:
        InputError: an empty name (``--entity ""`` or a bare ``@``).
    """
    out = [raw.strip().lstrip("@").strip() for raw in names or []]
    if not all(out):
        raise InputError("an --entity is empty", "name the entity, e.g. --entity Alice")
    return out


class RetainReport(msgspec.Struct):
    """What retain did: the fact (new, or the duplicate it matched) and where it is;
    ``confirmed``: the claims (facts an assistant said) this fact of a user or a tool
    says the same as, which now stand as evidence."""

    fact_id: str
    source: str
    created: bool
    path: str
    bullet: str
    confirmed: list[str] = msgspec.field(default_factory=list)


def _duplicate(
    mem: MemoryState, kind: str, content: str, entities: list[str], speaker: str
) -> Fact | None:
    """The current fact that already says this: of the same kind, content and entities;
    a claim is never one for a user or a tool (their fact confirms it instead), and
    a claim finds any fact saying the same, whatever its kind."""
    said = norm(content)
    keys = sorted(e.lower() for e in entities)
    for fid in sorted(i for ff in mem.files.values() for i in ff.ids):
        f = mem.facts[fid]
        if f.speaker == "assistant" and speaker != "assistant":
            continue
        if (
            (f.kind == kind or speaker == "assistant")
            and norm(f.content) == said
            and all(k in {e.lower() for e in f.entities} for k in keys)
        ):
            return f
    return None


def check_speaker(speaker: str, turn: int) -> str:
    """Who said a fact, checked.

    Raises:
        InputError: not user, assistant or tool, or a negative turn.
    """
    if speaker not in SPEAKERS:
        raise InputError(f"unknown speaker {speaker!r}", f"use one of: {', '.join(SPEAKERS)}")
    if turn < 0:
        raise InputError(f"turn must be 0 or more, got {turn}", "give the turn's number, from 1")
    return speaker


def _redacted(store: Store, content: str, names: list[str]) -> tuple[str, list[str], list[Finding]]:
    """The fact and its entities as they may be written and recorded, and the secrets
    taken out of them."""
    scanner = store.secrets()
    parts = [scanner.redact(t) for t in [content, *names]]
    found = [f for r in parts for f in r.findings]
    return parts[0].text, [r.text for r in parts[1:]], found


def _write_and_record(
    store: Store, path: Path, rel: str, day: str, bullet: str, found: list[Finding], actor: str
) -> int:
    """Insert the bullet under ``## Retain`` of the daily log at ``path`` (``rel`` in
    the workspace), warning about the secrets ``found`` at its line, write the file and
    sync the brain with it (cause ``retain``); returns the bullet's line.

    Raises:
        WorkspaceError: the file cannot be read, or the sync failed after the write.
    """
    root = store.graph.workspace
    limit = store.setting(Indexing).max_file_bytes
    old = read_text(Path(root), rel, max_bytes=limit) if path.exists() else None
    if isinstance(old, Skipped):
        raise WorkspaceError(f"cannot read {rel}: {old.reason}", "fix or move that file")
    before = old.text if old is not None else None
    text, line = insert_retained(before, bullet, day)
    at = [msgspec.structs.replace(f, line=line, end_line=line) for f in found]
    warn_file(store.warn, rel, at, "from the retained fact before writing and recording")
    write_workspace_file(Path(root), rel, text)
    try:
        sync(store, root, cause="retain", actor=actor)
    except OcbError as exc:
        raise WorkspaceError(
            f"{rel} holds the fact, but it was not recorded: {exc.message}",
            "free disk space, then run ocb init to record it (retaining it again would "
            "write a second bullet)",
        ) from exc
    return line


def _checked(
    kind: str, content: str, salience: float | None, confidence: float | None, speaker: str
) -> tuple[str, str]:
    """The fact's kind and its content on one line.

    Raises:
        InputError: an unknown kind, a fraction out of [0, 1], a confidence on a fact
            that is neither an opinion nor a claim, or no content.
    """
    kind = check_kind(kind)
    check_fraction("salience", salience)
    check_fraction("confidence", confidence)
    if confidence is not None and kind != "O" and speaker != "assistant":
        raise InputError(
            "only opinions (--type O) and claims (--speaker assistant) carry a confidence",
            "drop --confidence",
        )
    content = " ".join(content.split())
    if not content:
        raise InputError("nothing to retain", 'give the fact, e.g. ocb retain "Alice owns billing"')
    return kind, content


def retain(
    store: Store,
    content: str,
    *,
    kind: str = "W",
    entities: list[str] | None = None,
    salience: float | None = None,
    confidence: float | None = None,
    estimate: Callable[[str, str, list[str]], float] | None = None,
    speaker: str = "user",
    session: str = "",
    turn: int = 0,
    actor: str = "cli",
) -> RetainReport:
    """Append a fact bullet to today's daily log (``memory/YYYY-MM-DD.md`` of the
    workspace, by the brain's clock) under ``## Retain`` and record it. An exact
    duplicate of a current fact writes and records nothing. Without a salience,
    ``estimate(kind, content, entities)`` (e.g. an LLM) gives one, written into the
    bullet so the Markdown keeps it; without either, the deterministic estimate of
    ``workspace_sync.estimate_salience`` applies when the bullet is read.

    A secret in the fact (``secrets.*`` settings) is redacted before the bullet is
    written: the text comes from an agent, not from the user's own hand, and a token
    written into the daily log would live on in the workspace, its git history and its
    backups even though the log never records it. The fact keeps its meaning, the file
    and the log agree, and a warning names the bullet's ``file:line``.

    ``speaker``, ``session`` and ``turn`` say who said it, written into the bullet's
    head: what an assistant said is a claim (see ``projections.memory``); a fact of a
    user or a tool that says the same as a claim confirms it. Recorded as ``actor``."""
    check_speaker(speaker, turn)
    kind, content = _checked(kind, content, salience, confidence, speaker)
    names = entity_names(entities)
    store.load("config", "graph", "vectors", "memory")
    content, names, found = _redacted(store, content, names)
    session = redact_key(store.warn, store.secrets(), "session", session)
    mem = store.state("memory")
    dup = _duplicate(mem, kind, content, names, speaker)
    if dup is not None:
        at = [msgspec.structs.replace(f, line=dup.start_line, end_line=dup.end_line) for f in found]
        warn_file(store.warn, dup.path, at, "from the retained fact (already recorded there)")
        return RetainReport(dup.id, dup.source, False, dup.path, "")
    root = store.graph.workspace
    if not root:
        raise WorkspaceError(
            "this brain has no workspace to write the fact into",
            "index one first: ocb init --workspace DIR --brain B",
        )
    day = today(store.clock()).isoformat()
    rel = f"memory/{day}.md"
    path = writable_target(Path(root), rel)  # a refusal comes before anything is read
    if kind == "O" and confidence is None:
        confidence = 0.5
    if salience is None and estimate is not None:
        salience = round(float(estimate(kind, content, names)), 3)
        check_fraction("estimated salience", salience)
    bullet = format_bullet(
        kind, content, names, salience=salience, confidence=confidence,
        speaker=speaker, session=session, turn=turn,
    )  # fmt: skip
    claims = {c.id for c in mem.claims() if norm(c.content) == norm(content)}
    line = _write_and_record(store, path, rel, day, bullet, found, actor)
    mem = store.state("memory")
    ff = mem.files.get(rel)
    for fid in ff.ids if ff else ():
        f = mem.facts[fid]
        if f.start_line == line:
            standing = {c.id for c in mem.claims()}
            confirmed = sorted(claims - standing) if speaker != "assistant" else []
            return RetainReport(f.id, f.source, True, rel, bullet, confirmed)
    raise WorkspaceError(f"{rel} changed while the fact was written", "check the file, then retry")


# --------------------------------------------------------------------------- recall


def fact_index(store: Store) -> FactIndex:
    """The search index of the current facts: kept on the store while the facts do not
    change, and cached on disk (``cache/facts-<seq>-<embedder>.idx``, see
    ``Store.cached_index``) so a new process does not embed every fact again."""
    mem: MemoryState = store.state("memory")
    key = str(mem.facts_seq)

    def build(emb: Embedder) -> SearchIndex:
        return FactIndex.build(mem, emb).search

    def current(search: SearchIndex) -> bool:
        return search.ids == sorted(i for ff in mem.files.values() for i in ff.ids)

    def make() -> FactIndex:
        return FactIndex(mem, store.cached_index("facts", key, build, valid=current))

    return store.derived("facts", key, make)


def check_entities(mem: MemoryState, names: list[str]) -> tuple[str, ...]:
    """Entity names as given, each known to the memory.

    Raises:
        InputError: an empty name, or an entity no current fact mentions (with close
            names).
    """
    out = []
    for name in entity_names(names):
        if name.lower() not in mem.entities:
            known = sorted(e.name for e in mem.entities.values())
            raise unknown(
                "entity (no fact mentions it)", name, known, "list entities with ocb recall --json"
            )
        out.append(name)
    return tuple(out)


class RecallAnswer(msgspec.Struct):
    """What recall returns: the trace id, the question, the date phrase it read, the
    results within the budget and how many the budget left out."""

    trace_id: str
    query: str
    results: list[RecallItem]
    context_chars: int
    dropped: int
    window: Window
    date_phrase: str = ""
    weights: tuple[float, float, float] = (0.4, 0.35, 0.25)


def _when(
    query: str, since: str | None, between: tuple[str, str] | None, now: int, around_days: int
) -> tuple[Window, DatePhrase]:
    """The time window of a recall (``since``, ``between`` and a date the query names)
    and what the query said about dates."""
    window = Window()
    if since:
        window = window.intersect(since_window(since, now))
    if between:
        window = window.intersect(between_window(*between))
    date = date_in_query(query, now, around_days)
    if date.window is not None:
        window = window.intersect(date.window)
    return window, date


def _check_recall(k: int, depth: int, min_salience: float, max_chars: int | None) -> None:
    if k < 1:
        raise InputError(f"`k` must be at least 1, got {k}", "ask for 1 or more results", param="k")
    if depth < 0:
        raise InputError("`depth` must be 0 or more", "use 0, 1 or 2", param="depth")
    check_fraction("min salience", min_salience)
    if max_chars is not None and max_chars < 1:
        raise InputError(
            "`max_chars` must be at least 1", "give a budget such as 2000", param="max_chars"
        )


def recall(
    store: Store,
    query: str = "",
    *,
    k: int = 10,
    since: str | None = None,
    between: tuple[str, str] | None = None,
    kinds: list[str] | None = None,
    entities: list[str] | None = None,
    min_salience: float = 0.0,
    depth: int = 0,
    max_chars: int | None = None,
    record: bool = True,
    actor: str = "cli",
) -> RecallAnswer:
    """Recall facts; records the trace as ``actor`` (unless ``record`` is False or the
    brain is a view of the past)."""
    _check_recall(k, depth, min_salience, max_chars)
    store.load("config", "vectors", "memory")
    s = resolve(Memory, store.state("config").values)
    query = redact_input(store.warn, store.secrets(), "recall query", query)
    mem: MemoryState = store.state("memory")
    now = store.now()
    window, date = _when(query, since, between, now, s.around_days)
    rest, focus = date.rest, None
    if date.only_date:  # "what happened around Nov 5": the window's facts, nearest first
        rest, focus = "", date.day_ns
    req = RecallRequest(
        query=rest,
        focus_ns=focus,
        k=k,
        window=window,
        kinds=tuple(check_kind(x) for x in kinds or []),
        entities=check_entities(mem, entities or []),
        min_salience=min_salience,
        depth=depth,
        max_chars=max_chars,
    )
    seq = store.log.last_seq
    trace, kept, dropped = decide_recall(
        mem, fact_index(store), store.embedder(), req, now_ns=now, trace_id=f"r{seq + 1}", s=s
    )
    trace = msgspec.structs.replace(trace, query=query)
    record = record and store.as_of is None
    if record:
        store.record([trace], actor, expected_seq=seq)
    return RecallAnswer(
        trace.trace_id if record else "",
        query,
        kept,
        trace.context_chars,
        dropped,
        window,
        date.phrase,
        (s.w_match, s.w_salience, s.w_access),
    )
