"""The tables of the analytics store: every table's columns and types, which ones hold
the present and which grow, and how grouped tables share columns within a record.

NOTE: the columns of ``TABLES`` are the documented views (README, "History: SQL and
audit"): add columns at the end and bump ``replay.analytics.VERSION`` (stores of another
version are rebuilt). The store's own tables (``store_columns``) hold some of them as
codes (``CODED``), which the views (``view_sql``) turn back into names.
"""

from __future__ import annotations

# the DuckDB column types (timestamps are ns since the epoch, UTC)
BIGINT, INTEGER, DOUBLE, VARCHAR = "BIGINT", "INTEGER", "DOUBLE", "VARCHAR"
TIMESTAMP, VARCHARS, DOUBLES = "TIMESTAMP_NS", "VARCHAR[]", "DOUBLE[]"
_B, _I, _F, _S, _T, _SL, _FL = BIGINT, INTEGER, DOUBLE, VARCHAR, TIMESTAMP, VARCHARS, DOUBLES


TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "events": (("seq", _B), ("ts", _T), ("actor", _S), ("type", _S)),
    "traces": (
        ("seq", _B), ("ts", _T), ("trace_id", _S), ("query", _S), ("chat_id", _S),
        ("stop_reason", _S), ("context_chars", _I), ("fired", _I), ("seeds", _I),
        ("steps", _I), ("vetoed", _I), ("mode", _S), ("route", _S), ("route_mode", _S),
    ),
    "steps": (
        ("seq", _B), ("trace_id", _S), ("step", _I), ("hop", _I), ("node", _S),
        ("chosen", _S), ("candidates", _I), ("stop_logit", _F), ("weight", _F),
        ("logit", _F), ("tier", _S), ("followed", _SL),
    ),
    "fired": (("seq", _B), ("trace_id", _S), ("rank", _I), ("node", _S)),
    "seeds": (
        ("seq", _B), ("trace_id", _S), ("rank", _I), ("node", _S), ("score", _F),
        ("lexical", _F), ("vector", _F),
    ),
    "outcomes": (
        ("seq", _B), ("ts", _T), ("actor", _S), ("trace_id", _S), ("trace_seq", _B),
        ("chat_id", _S), ("reward", _F), ("source", _S), ("fired_ids", _SL),
    ),
    "deltas": (
        ("seq", _B), ("ord", _I), ("ts", _T), ("source", _S), ("target", _S),
        ("before", _F), ("after", _F), ("delta", _F), ("rule", _S), ("cause_seq", _B),
        ("event", _S),
    ),
    "lifecycle": (
        ("seq", _B), ("ts", _T), ("node", _S), ("action", _S), ("path", _S),
        ("start_line", _I), ("end_line", _I), ("content_hash", _S), ("other", _S),
        ("detail", _S),
    ),
    "files": (
        ("seq", _B), ("ts", _T), ("path", _S), ("action", _S), ("content_hash", _S),
        ("added", _I), ("kept", _I), ("removed", _I), ("revised", _I), ("old_path", _S),
    ),
    "injections": (
        ("seq", _B), ("ts", _T), ("node_id", _S), ("node_type", _S), ("content", _S),
        ("chat_id", _S), ("trace_id", _S), ("anchor_query", _S), ("authority", _S),
        ("connections", _I),
    ),
    "maintenance": (("seq", _B), ("ts", _T), ("op", _S), ("params", _S), ("summary", _S)),
    "labels": (
        ("seq", _B), ("ts", _T), ("trace_id", _S), ("hop", _I), ("node", _S),
        ("teacher", _S), ("targets", _SL), ("scores", _FL),
    ),
    "config": (("seq", _B), ("ts", _T), ("key", _S), ("value", _S)),
    "nodes": (
        ("id", _S), ("kind", _S), ("path", _S), ("start_line", _I), ("end_line", _I),
        ("heading", _S), ("authority", _S), ("created_seq", _B), ("chars", _I),
        ("stop", _F), ("baseline", _F), ("alias_of", _S),
    ),
    "edges": (
        ("source", _S), ("target", _S), ("weight", _F), ("kind", _S), ("relevance", _F),
        ("last_seq", _B),
    ),
    "retractions": (
        ("seq", _B), ("ts", _T), ("actor", _S), ("target_seq", _B), ("kind", _S),
        ("node_id", _S), ("reason", _S),
    ),
    "route_credits": (
        ("seq", _B), ("ts", _T), ("route_id", _S), ("question", _S), ("node", _S),
        ("delta", _F), ("cause_seq", _B),
    ),
}  # fmt: skip
"""Every table by name with its columns; each is also a view of the same name."""

CURRENT = ("edges", "nodes")
"""Tables holding the present (rows replaced as they change); the rest only grow."""


HISTORY = tuple(n for n in TABLES if n not in CURRENT)
"""Tables that only grow (one row per recorded fact)."""

GROUPED: dict[str, tuple[tuple[str, ...], str, int]] = {
    "deltas": (("seq", "ts", "rule", "cause_seq", "event"), "ord", 0),
    "fired": (("seq", "trace_id"), "rank", 1),
    "seeds": (("seq", "trace_id"), "rank", 1),
    "steps": (("seq", "trace_id"), "step", 1),
}
"""Tables whose rows come in groups, one group per record: table -> (the columns shared
by a group, given once per group and repeated at load; the ordinal column, numbered
within the group at load; its first value). The other columns form each row's tail
(a bare value when there is one)."""


CODED: dict[str, tuple[str, ...]] = {
    "deltas": ("source", "target", "rule", "event"),
    "fired": ("node",),
    "seeds": ("node",),
    "steps": ("node", "chosen", "tier"),
}
"""Columns the store holds as INTEGER codes of ``store.ids`` (one name a code, the
same code in every table), and its views turn back into names: the rows DuckDB loads
hold numbers, not millions of Python strings."""

BY_TRACE = ("fired", "seeds", "steps")
"""Tables whose ``trace_id`` the store does not hold: their view reads it from
``store.traces`` by ``seq`` (one trace a seq)."""


APART: dict[str, str] = {"deltas": "updates"}
"""Grouped tables whose heads the store keeps once per group, in a table of their own
(``store.<name>``, one row per record, keyed by ``seq``), which their view joins back:
``store.deltas`` holds each change's edge and weights beside its seq and ordinal, and
``store.updates`` each weight-changing record's time, rule, cause and event. A flush's
changes are stored by edge (``replay.store_load.by_edge``), so the heads would repeat
in no order at all, the costliest columns to compress and write."""


def _apart(table: str) -> tuple[str, ...]:
    """The heads of ``table`` kept in ``store.<APART[table]>`` (all but ``seq``)."""
    return tuple(h for h in GROUPED[table][0] if h != "seq") if table in APART else ()


def store_columns(table: str) -> tuple[tuple[str, str], ...]:
    """The columns of ``store.<table>``: those of the view, coded ones as INTEGER, a
    trace's rows without the ``trace_id`` of their trace, heads kept apart left out."""
    coded, apart = CODED.get(table, ()), _apart(table)
    return tuple(
        (c, INTEGER if c in coded else k)
        for c, k in TABLES[table]
        if not (c == "trace_id" and table in BY_TRACE) and c not in apart
    )


def heads_columns(table: str) -> tuple[tuple[str, str], ...]:
    """The columns of ``store.<APART[table]>``: ``seq``, then the heads kept apart
    (coded ones as INTEGER)."""
    coded, kinds = CODED.get(table, ()), dict(TABLES[table])
    return tuple((c, INTEGER if c in coded else kinds[c]) for c in ("seq", *_apart(table)))


def view_sql(table: str) -> str:
    """The ``SELECT`` of the view ``main.<table>`` over ``store.<table>`` (names for
    codes, a trace's id from its trace, heads kept apart from their table), columns as
    ``TABLES`` lists them."""
    coded, apart = CODED.get(table, ()), _apart(table)
    picks, joins = [], []
    if apart:
        joins.append(f" JOIN store.{APART[table]} _h ON _h.seq = s.seq")
    for c, _ in TABLES[table]:
        at = "_h" if c in apart else "s"
        if c in coded:
            picks.append(f"_{c}.name AS {c}")
            joins.append(f" LEFT JOIN store.ids _{c} ON _{c}.id = {at}.{c}")
        elif c == "trace_id" and table in BY_TRACE:
            picks.append("_t.trace_id")
            joins.append(" JOIN store.traces _t ON _t.seq = s.seq")
        else:
            picks.append(f"{at}.{c}")
    return f"SELECT {', '.join(picks)} FROM store.{table} s{''.join(joins)}"


def tail_columns(table: str) -> tuple[str, ...]:
    """The columns of each row of a grouped table (the ones not shared by its group)."""
    heads, ordinal, _ = GROUPED[table]
    return tuple(c for c, _ in TABLES[table] if c not in heads and c != ordinal)
