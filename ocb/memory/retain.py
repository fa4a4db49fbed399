"""Retain on a brain (``Brain.retain``): write a fact into today's daily log and record
it; and the checks of a fact's kind, entities and fractions that recall shares
(``ocb.memory.recall_service``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec

from ocb.engine.dates import today
from ocb.graph.sync import sync
from ocb.redaction import redact_key, warn_file
from ocb.settings import Indexing
from ocb.store import Store
from ocb_events.errors import InputError, OcbError, WorkspaceError
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
    root = store.workspace
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
            "only opinions (`kind=O`) and claims (`speaker=assistant`) carry a confidence",
            "drop `confidence`",
            param=("kind", "speaker", "confidence"),
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
    root = store.workspace
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
