"""Recall on a brain (``Brain.recall``): the question's date window, the filters
checked against the memory, the facts ranked and spread (``ocb.memory.recall``), and
the recall recorded as a trace that resets its facts' access decay."""

from __future__ import annotations

import msgspec

from ocb.engine.dates import DatePhrase, Window, between_window, date_in_query, since_window
from ocb.engine.embed import Embedder
from ocb.engine.search import SearchIndex
from ocb.memory.recall import FactIndex, RecallItem, RecallRequest, decide_recall
from ocb.memory.retain import check_fraction, check_kind, entity_names
from ocb.redaction import redact_input
from ocb.settings import Memory, actor_of, resolve
from ocb.store import Store
from ocb_events.errors import InputError, unknown
from ocb_events.schema import RecallTraced
from projections.memory import State as MemoryState

__all__ = ["RecallAnswer", "check_entities", "fact_index", "recall"]


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
    record = record and store.as_of is None
    got: list[tuple[RecallTraced, list[RecallItem], int]] = []

    def decide(seq: int) -> list[RecallTraced]:
        trace, kept, dropped = decide_recall(
            store.state("memory"), fact_index(store), store.embedder(), req, now_ns=now,
            trace_id=f"r{seq + 1}", s=s,
        )  # fmt: skip
        got.append((msgspec.structs.replace(trace, query=query), kept, dropped))
        return [got[-1][0]] if record else []

    store.transact(actor_of(actor), decide)
    trace, kept, dropped = got[-1]
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
