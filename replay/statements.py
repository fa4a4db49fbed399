"""Checking a query before it runs: DuckDB's parser splits it into statements, and
``replay.confinement``'s rules say which one ``ocb sql`` runs (one reading statement,
not too long, naming nothing that shows where the brain is stored).

The parser runs in this process, on an in-memory connection opened with the confined
configuration; nothing is executed here.
"""

from __future__ import annotations

import functools
import threading

import duckdb

from ocb_events.errors import AnalyticsError, InputError
from replay import confinement
from replay.worker import first_line


def _reading(con: duckdb.DuckDBPyConnection, text: str) -> str:
    """What to call the statement in ``text``: "SELECT" when it is one reading statement
    (a SELECT or an EXPLAIN of one), else its kind (``replay.confinement.kind_of``)."""
    try:
        stmts = con.extract_statements(text)
    except duckdb.Error as exc:
        raise AnalyticsError(first_line(exc), confinement.hint(type(exc).__name__)) from exc
    except (TypeError, UnicodeError) as exc:  # undecodable bytes in the argument
        raise AnalyticsError(
            "the SQL is not valid UTF-8 text", "retype the statement in UTF-8"
        ) from exc
    if not stmts:
        raise confinement.no_statement()
    if len(stmts) > 1:
        raise confinement.several(len(stmts))
    st = stmts[0]
    try:
        kind = st.type
    except ValueError:  # a statement kind the Python API cannot name (UPDATE EXTENSIONS)
        return confinement.kind_of(text, "this statement")
    if kind == duckdb.StatementType.EXPLAIN:
        inner = confinement.explained(st.query)
        try:
            if inner and _reading(con, inner[0]) == "SELECT":
                return "SELECT"
        except (AnalyticsError, InputError):
            pass
        return "EXPLAIN " + confinement.kind_of(inner[0] if inner else "", "a statement")
    if kind == duckdb.StatementType.MULTI:  # a PIVOT without an IN list
        return "PIVOT"
    if kind == duckdb.StatementType.SELECT:
        return "SELECT"
    return confinement.kind_of(st.query, kind.name)


def _check(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Refuse anything but one reading statement of at most ``MAX_CHARS`` characters
    that names nothing ``confinement.by_name`` refuses, with one line and a hint."""
    if len(sql) > confinement.MAX_CHARS:
        raise confinement.too_long(len(sql))
    kind = _reading(con, sql)
    if kind != "SELECT":
        raise confinement.refused(kind)
    named = confinement.by_name(sql)
    if named is not None:
        raise named


def check_query(sql: str) -> None:
    """Refuse SQL that ``AnalyticsStore.query`` would refuse for its kind, before any
    work (no store is opened or caught up).

    Raises:
        InputError: no statement (empty, only comments or ';').
        AnalyticsError: a syntax error, several statements, one that is not a read,
            one too long, or one naming what ``confinement.by_name`` refuses.
    """
    with _PARSING:
        _check(_parser(), sql)


_PARSING = threading.Lock()


@functools.cache
def _parser() -> duckdb.DuckDBPyConnection:
    """The connection statements are parsed on (opening one takes about 50 ms)."""
    return duckdb.connect(":memory:", config=dict(confinement.CONFIG))
