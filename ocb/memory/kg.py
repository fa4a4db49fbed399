"""Current facts (the KG) on a brain: state a subject's predicate with its source, read
the current value with its staleness and conflicts, and list every statement ever made.

A fact is current until a newer statement replaces it; stating the same value again
records a re-verification (it refreshes "last verified"). Old statements stay in the
log, so ``Brain(path, as_of=...)`` reads the facts of any past point.

Example:
    kg_set(brain, "Discord API", "rate_limit", "100/min", source="memory/x.md#L14")
    kg_get(brain, "discord api").facts[0].value  # '100/min'
"""

from __future__ import annotations

import re

import msgspec

from ocb.redaction import redact_input
from ocb.settings import Memory, actor_of, resolve
from ocb.store import Store
from ocb_events.errors import InputError, unknown
from ocb_events.schema import KgFactSet
from projections.kg import SEP, Entry, State as KgState, Statement, key
from replay import iso

DAY_NS = 86_400 * 1_000_000_000
SET_EXAMPLE = 'ocb kg set "Discord API" rate_limit "100/min" --source memory/2026-11-20.md#L14'
_LINK = re.compile(r"[^#\s]+#L(?P<start>[1-9]\d*)(?:-L(?P<end>[1-9]\d*))?")


class KgSetReport(msgspec.Struct):
    """What ``kg_set`` recorded: the statement, its seq and time (ISO), whether the
    value changed (True for a new fact) and the value it replaced (None when new)."""

    subject: str
    predicate: str
    value: str
    source: str
    seq: int
    time: str
    changed: bool
    previous: str | None = None


class Conflict(msgspec.Struct):
    """Another source's latest statement of a different value, made within
    ``stale_days`` before the current one."""

    value: str
    source: str
    time: str
    seq: int


class KgFact(msgspec.Struct):
    """A predicate's current value: the latest statement (value, source, seq), since
    when the value holds unbroken (``since``), when it was last stated (``verified``),
    its age in days against now, and a caveat when that age passes ``stale_days``."""

    predicate: str
    value: str
    source: str
    seq: int
    since: str
    verified: str
    age_days: float
    stale: bool
    caveat: str | None
    conflicts: list[Conflict]


class KgView(msgspec.Struct):
    """A subject's current facts (sorted by predicate), read at seq ``seq`` and time
    ``now`` (ISO) with the staleness threshold in force."""

    subject: str
    seq: int
    now: str
    stale_days: float
    facts: list[KgFact]


class KgStatement(msgspec.Struct):
    """One statement of a history (time in ISO)."""

    value: str
    source: str
    time: str
    seq: int


class KgPredicateHistory(msgspec.Struct):
    """Every statement of one predicate, oldest first."""

    predicate: str
    statements: list[KgStatement]


class KgHistory(msgspec.Struct):
    """Every statement of a subject's predicates (sorted by predicate), up to ``seq``."""

    subject: str
    seq: int
    predicates: list[KgPredicateHistory]


# --------------------------------------------------------------------------- input


def _one_line(name: str, text: str, *, required: bool = True) -> str:
    """``text`` stripped; one line of text, not empty when ``required``."""
    out = text.strip()
    if required and not out:
        raise InputError(f"the {name} is empty", f"give a {name}, e.g. {SET_EXAMPLE}")
    if any(c < " " or c == "\x7f" for c in out):
        raise InputError(
            f"the {name} must be one line of text",
            "remove the line breaks and control characters",
        )
    return out


def check_source(source: str) -> str:
    """A statement's source: free text, or a file link ``path#L12`` / ``path#L12-L20``.

    Anything without spaces that holds a ``#`` is read as a file link.

    Raises:
        InputError: more than one line, or a malformed file link.
    """
    out = _one_line("source", source, required=False)
    if "#" not in out or any(c.isspace() for c in out):
        return out
    m = _LINK.fullmatch(out)
    if m is None or (m["end"] is not None and int(m["end"]) < int(m["start"])):
        raise InputError(
            f"source {out!r} is not a file link of the form path#L12 or path#L12-L20",
            "cite 1-based lines, e.g. `source=memory/2026-11-20.md#L14-L16`",
            param="source",
        )
    return out


def kg_set(
    store: Store, subject: str, predicate: str, value: str, source: str = "", *, actor: str = "cli"
) -> KgSetReport:
    """State the current value of a subject's predicate and record it as ``actor``.

    The same value again is recorded too: it refreshes "last verified". A secret in
    any field is recorded redacted (``[REDACTED:kind]``), with a warning.

    Args:
        store: a writable brain (not a view of the past).
        subject: what the fact is about, e.g. "Discord API" (matched ignoring case;
            this spelling is kept).
        predicate: which property, e.g. "rate_limit".
        value: the value now, one line.
        source: where it was read: free text or ``path#L12`` / ``path#L12-L20``.

    Returns:
        The statement recorded, whether the value changed and the previous value.

    Raises:
        InputError: empty or multi-line fields, a malformed file link, or a brain
            opened as of a past point.
    """
    subject = _one_line("subject", subject)
    predicate = _one_line("predicate", predicate)
    value = _one_line("value", value)
    source = check_source(source)
    store.load("config", "kg")
    scanner = store.secrets()
    fields = {"subject": subject, "predicate": predicate, "value": value, "source": source}
    subject, predicate, value, source = (
        redact_input(store.warn, scanner, f"kg set {name}", text) for name, text in fields.items()
    )
    said: list[str | None] = []

    def decide(_seq: int) -> list[KgFactSet]:
        entry = store.state("kg").entries.get(key(subject, predicate))  # what was said
        said.append(entry.history[-1].value if entry is not None else None)
        return [KgFactSet(subject=subject, predicate=predicate, value=value, source=source)]

    rec = store.transact(actor_of(actor), decide)[0]
    previous = said[-1]
    return KgSetReport(
        subject, predicate, value, source, rec.seq, iso(rec.ts), previous != value, previous
    )


# --------------------------------------------------------------------------- read


def _as_recorded(store: Store, subject: str, predicate: str | None) -> tuple[str, str | None]:
    """A subject and predicate as ``kg_set`` records them (a secret redacted), so that a
    lookup by the same words finds them."""
    scanner = store.secrets()
    if predicate is not None:
        predicate = scanner.redact(predicate).text
    return scanner.redact(subject).text, predicate


def _entries(state: KgState, subject: str, predicate: str | None) -> list[Entry]:
    """The entries of a subject (one predicate, or all), sorted by predicate.

    Raises:
        InputError: no fact has that subject (or predicate), naming close ones.
    """
    name = subject.strip()
    prefix = name.lower() + SEP
    keys = sorted(k for k in state.entries if k.startswith(prefix))
    if not keys:
        latest = {k.split(SEP)[0]: e.subject for k, e in sorted(state.entries.items())}
        known = sorted(latest.values(), key=str.lower)
        hint = (
            "known subjects: " + ", ".join(known[:10]) + (", ..." if len(known) > 10 else "")
            if known
            else f"no facts yet; state one: {SET_EXAMPLE}"
        )
        raise unknown("subject", name, known, hint)
    entries = [state.entries[k] for k in keys]
    if predicate is None:
        return entries
    got = state.entries.get(key(name, predicate))
    if got is None:
        preds = [e.predicate for e in entries]
        subject_name = _subject_name(entries)
        raise unknown(
            "predicate",
            predicate.strip(),
            preds,
            f"{subject_name} has: " + ", ".join(preds),
            f" of {subject_name!r}",
        )
    return [got]


def days_text(days: float) -> str:
    """``1 day``, ``2.5 days``."""
    return f"{days:g} day" + ("" if days == 1 else "s")


def _subject_name(entries: list[Entry]) -> str:
    """The subject as spelled by its most recent statement."""
    return max(entries, key=lambda e: e.history[-1].seq).subject


def _conflicts(history: list[Statement], window_ns: float) -> list[Conflict]:
    """Each other source's latest statement, when it is within the window before the
    current one and states another value (newest first)."""
    last = history[-1]
    latest_by_source: dict[str, Statement] = {}
    for st in history[:-1]:
        latest_by_source[st.source] = st
    return [
        Conflict(st.value, st.source, iso(st.ts), st.seq)
        for st in sorted(latest_by_source.values(), key=lambda s: -s.seq)
        if st.source != last.source and st.value != last.value and last.ts - st.ts <= window_ns
    ]


def _fact(entry: Entry, now_ns: int, stale_days: float) -> KgFact:
    history = entry.history
    last = history[-1]
    since = last
    for st in reversed(history):
        if st.value != last.value:
            break
        since = st
    age = max(0.0, (now_ns - last.ts) / DAY_NS)
    stale = age > stale_days
    return KgFact(
        predicate=entry.predicate,
        value=last.value,
        source=last.source,
        seq=last.seq,
        since=iso(since.ts),
        verified=iso(last.ts),
        age_days=round(age, 2),
        stale=stale,
        caveat=f"last verified {days_text(int(age))} ago" if stale else None,
        conflicts=_conflicts(history, stale_days * DAY_NS),
    )


def kg_get(store: Store, subject: str, predicate: str | None = None) -> KgView:
    """A subject's current facts (all its predicates, or one), matched case-insensitively.

    Each fact carries its latest value and source, when it was last verified, its age
    against the brain's clock (a view of the past reads at its own time), a caveat past
    ``memory.stale_days``, and the conflicting values other sources stated within
    ``stale_days`` before it.

    Raises:
        InputError: an unknown subject or predicate (suggesting close names).
    """
    store.load("config", "kg")
    stale_days = resolve(Memory, store.state("config").values).stale_days
    subject, predicate = _as_recorded(store, subject, predicate)
    entries = _entries(store.state("kg"), subject, predicate)
    now = store.now()
    return KgView(
        subject=_subject_name(entries),
        seq=store.horizon,
        now=iso(now),
        stale_days=stale_days,
        facts=[_fact(e, now, stale_days) for e in entries],
    )


def kg_history(store: Store, subject: str, predicate: str | None = None) -> KgHistory:
    """Every statement of a subject's predicates (or one), oldest first.

    Raises:
        InputError: an unknown subject or predicate (suggesting close names).
    """
    store.load("config", "kg")
    subject, predicate = _as_recorded(store, subject, predicate)
    entries = _entries(store.state("kg"), subject, predicate)
    return KgHistory(
        subject=_subject_name(entries),
        seq=store.horizon,
        predicates=[
            KgPredicateHistory(
                e.predicate, [KgStatement(s.value, s.source, iso(s.ts), s.seq) for s in e.history]
            )
            for e in entries
        ],
    )
