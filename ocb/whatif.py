"""Comparing a brain with its past and with an alternative past: ``diff`` between two
points of its history, and ``what_if`` replay under other learning settings.

What-if replay never touches the real brain: it replays the history into a scratch
brain (``ocb.scratch``, which says what is copied and what is re-decided) and compares
that brain with the real one at the end.

Example:
    >>> report = what_if(brain, 0, rule="heuristic", eta=0.05)       # doctest: +SKIP
    >>> report.weights.edges_changed, report.queries.what_if_mean_fired  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TypedDict

import msgspec

from ocb.engine.policy import tiers
from ocb.graph.query import query_at
from ocb.scratch import Progress, ReplayStats, scratch_replay
from ocb.settings import Traversal, check_key
from ocb.store import Store
from ocb_events.errors import InputError
from ocb_events.protocol import EventLog
from projections import graph as graph_projection
from replay import iso, resolve_point
from replay.diff import GraphDiff, Tiers, diff_graphs

__all__ = [
    "DiffReport",
    "OVERRIDES",
    "QueryComparison",
    "QueryRun",
    "ReplayStats",
    "WhatIfReport",
    "check_overrides",
    "compare_queries",
    "diff",
    "point",
    "scratch_replay",
    "what_if",
]

OVERRIDES = ("rule", "eta", "gamma", "baseline_rate")
"""The learning settings a what-if usually overrides (any ``learning.*`` name works)."""


# --------------------------------------------------------------------------- points


def point(log: EventLog, spec: str | int, param: str) -> int:
    """The seq the point ``param`` (``start``, ``end``) names: 0 (before the first
    record), a seq or an ISO time (resolved with ``replay.resolve_point``).

    Raises:
        InputError: a malformed value or a point outside the history (with the range).
    """
    if str(spec).strip() == "0":
        return 0
    try:
        return resolve_point(log, spec, param)
    except InputError as exc:
        hint = exc.hint + " (0: before the first record)"
        raise InputError(exc.message, hint, param=exc.params) from None


def _check_report(threshold: float, top: int) -> None:
    if not threshold >= 0:
        raise InputError(
            f"`threshold` must be at least 0, got {threshold}",
            "pass `threshold=0.05`",
            param="threshold",
        )
    if top < 1:
        raise InputError(f"`top` must be at least 1, got {top}", "pass `top=20`", param="top")


# --------------------------------------------------------------------------- diff


class DiffReport(msgspec.Struct, frozen=True):
    """The graph at ``to_seq`` compared with the graph at ``from_seq`` (times as ISO
    UTC; ``""`` for seq 0), and how many records lie between."""

    from_seq: int
    to_seq: int
    from_time: str
    to_time: str
    records: int
    graph: GraphDiff


def _view_at(store: Store, seq: int) -> tuple[graph_projection.State, Tiers]:
    if seq == 0:
        return graph_projection.initial(), Tiers()
    with Store(store.path, writer=False, as_of=seq, warn=store.warn) as view:
        return view.graph, tiers(view.setting(Traversal))


def diff(
    store: Store,
    start: str | int,
    end: str | int | None = None,
    *,
    threshold: float = 0.0,
    top: int = 20,
) -> DiffReport:
    """How the graph changed between two points of the brain's history.

    Args:
        store: an open brain (read-only is enough).
        start: the earlier point: 0, a seq or an ISO time.
        end: the later point (default: the brain's last seq).
        threshold: weights that moved by at most this count as unchanged.
        top: how many node and edge changes to list.

    Raises:
        InputError: a point outside the history, ``start`` after ``end``, bad limits.
    """
    _check_report(threshold, top)
    a = point(store.log, start, "start")
    b = point(store.log, end, "end") if end is not None else store.horizon
    if a > b:
        raise InputError(
            f"`start` {a} is after `end` {b}",
            "give the earlier point as `start`",
            param=("start", "end"),
        )
    (ga, ta), (gb, tb) = _view_at(store, a), _view_at(store, b)
    graph = diff_graphs(ga, gb, tiers_before=ta, tiers_after=tb, threshold=threshold, top=top)
    times = [iso(store.log.ts_of(s)) if s else "" for s in (a, b)]
    return DiffReport(a, b, times[0], times[1], b - a, graph)


# --------------------------------------------------------------------------- overrides


class Relearning(TypedDict, total=False):
    """The ``learning.*`` settings a what-if usually changes (None: as recorded)."""

    rule: str | None
    eta: float | None
    gamma: float | None
    baseline_rate: float | None


def check_overrides(**overrides: object) -> dict[str, object]:
    """The given (non-None) ``learning.*`` overrides, validated and coerced.

    Raises:
        InputError: an unknown setting, rule, or a value out of range.
    """
    return {k: check_key(f"learning.{k}", v) for k, v in overrides.items() if v is not None}


# --------------------------------------------------------------------------- what-if


class QueryRun(msgspec.Struct, frozen=True):
    """One recorded query re-run on the real brain and on the what-if brain."""

    query: str
    real_fired: int
    what_if_fired: int
    real_context_chars: int
    what_if_context_chars: int


class QueryComparison(msgspec.Struct, frozen=True):
    """The recorded queries (distinct texts after ``--from``) re-run at the end on both
    brains without recording: means of fired nodes and context characters, how many
    fired a different set of nodes, and the ``top`` that differ most."""

    count: int
    real_mean_fired: float
    what_if_mean_fired: float
    real_mean_context_chars: float
    what_if_mean_context_chars: float
    changed: int
    top: list[QueryRun]


class WhatIfReport(msgspec.Struct, frozen=True):
    """A what-if replay from ``from_seq`` to ``to_seq`` with ``overrides``: what it
    re-decided, the what-if graph against the real one at the end (``before``: real,
    ``after``: what-if), and the recorded queries re-run on both."""

    from_seq: int
    to_seq: int
    overrides: dict[str, float | int | bool | str]
    replay: ReplayStats
    weights: GraphDiff
    queries: QueryComparison


def _mean(values: list[int]) -> float:
    return round(sum(values) / len(values), 3) if values else 0.0


def compare_queries(real: Store, alt: Store, texts: list[str], top: int) -> QueryComparison:
    """Run each query on both brains (recording nothing, dates read at the same
    time) and compare what fired."""
    runs: list[QueryRun] = []
    changed = 0
    at = real.now()
    for text in texts:
        a = query_at(real, text, lambda: at, top=1, record=False)
        b = query_at(alt, text, lambda: at, top=1, record=False)
        changed += set(a.fired) != set(b.fired)
        runs.append(QueryRun(text, len(a.fired), len(b.fired), a.context_chars, b.context_chars))
    differ = [
        r
        for r in runs
        if (r.real_fired, r.real_context_chars) != (r.what_if_fired, r.what_if_context_chars)
    ]
    differ.sort(
        key=lambda r: (
            -abs(r.what_if_context_chars - r.real_context_chars),
            -abs(r.what_if_fired - r.real_fired),
            r.query,
        )
    )
    return QueryComparison(
        count=len(runs),
        real_mean_fired=_mean([r.real_fired for r in runs]),
        what_if_mean_fired=_mean([r.what_if_fired for r in runs]),
        real_mean_context_chars=_mean([r.real_context_chars for r in runs]),
        what_if_mean_context_chars=_mean([r.what_if_context_chars for r in runs]),
        changed=changed,
        top=differ[:top],
    )


def what_if(
    store: Store,
    start: str | int = 0,
    *,
    threshold: float = 0.0,
    top: int = 20,
    queries: int = 50,
    progress: Progress | None = None,
    **overrides: object,
) -> WhatIfReport:
    """Re-decide the brain's learning from ``start`` with other settings, in a scratch
    brain, and compare the result with the real brain (which is never changed).

    Args:
        store: an open brain (read-only is enough).
        start: replay after this point: 0 (the whole history), a seq or an ISO time.
        threshold: weight differences of at most this are not counted as changed.
        top: how many edge changes and queries to list.
        queries: how many distinct recorded queries to re-run on both brains.
        progress: receives ``("what-if", done, total)`` while replaying.
        overrides: ``learning.*`` settings (``rule``, ``eta``, ``gamma``,
            ``baseline_rate``, ``weight_human`` ...); None values are ignored.

    Raises:
        InputError: a point outside the history, an unknown rule or setting, a value
            out of range, or bad limits. Nothing is recorded anywhere.
    """
    _check_report(threshold, top)
    if queries < 0:
        raise InputError(
            f"`queries` must be at least 0, got {queries}", "pass `queries=50`", param="queries"
        )
    settings = check_overrides(**overrides)
    seq = point(store.log, start, "start")
    with scratch_replay(store, seq, settings, queries=queries, progress=progress) as r:
        real_t, alt_t = store.setting(Traversal), r.brain.setting(Traversal)
        weights = diff_graphs(
            store.graph,
            r.brain.graph,
            tiers_before=tiers(real_t),
            tiers_after=tiers(alt_t),
            threshold=threshold,
            top=top,
        )
        compared = compare_queries(store, r.brain, r.queries, top)
        stats = r.stats
    return WhatIfReport(
        from_seq=seq,
        to_seq=store.horizon,
        overrides=settings,  # type: ignore[arg-type]
        replay=stats,
        weights=weights,
        queries=compared,
    )
