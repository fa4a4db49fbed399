"""What ``ocb sql`` may run over the analytics store, and how a refusal reads.

Nothing here touches DuckDB: ``replay.analytics`` opens every connection with
``CONFIG``, parses each query into statements and applies these rules. A query is one
reading statement: a SELECT (SHOW, DESCRIBE and SUMMARIZE are SELECTs) or an EXPLAIN of
one. Everything else is refused by kind, with one line and a hint; a file-reading
function inside a SELECT is refused by DuckDB itself (``CONFIG``) and reported by
``no_files``. A PRAGMA is refused: some write files (profiling output; IMPORT DATABASE
parses as one) and each harmless one has a ``pragma_`` table function to SELECT from.
"""

from __future__ import annotations

import re
from datetime import UTC
from typing import Any

import duckdb

from ocb_events.errors import AnalyticsError, InputError

CONFIG = {
    # no file but the store (read_text, read_csv, glob, COPY, EXPORT, ATTACH ...), no
    # network, no INSTALL or LOAD
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    # a name in SQL never scans a Python object of the caller's frames
    "python_enable_replacements": False,
}
"""The configuration of every connection (after it: times in UTC, settings locked)."""

_READ_HINT = (
    "ocb sql runs one read-only SELECT (or SHOW, DESCRIBE, SUMMARIZE, EXPLAIN) over the "
    "brain's views; change the brain with ocb commands"
)
_SETTINGS_HINT = "ocb sql's settings are fixed: times in UTC, no file or network access"
_KIND_HINTS = {
    "PRAGMA": "use SHOW, DESCRIBE or a pragma_ table function, "
    "e.g. SELECT * FROM pragma_table_info('deltas')",
    "SET": _SETTINGS_HINT,
    "RESET": _SETTINGS_HINT,
    "PIVOT": "list the values to pivot on, "
    "e.g. PIVOT deltas ON rule IN ('pg', 'decay') USING count(*)",
}
_LEAD = re.compile(r"(?:\s+|--[^\n]*|/\*.*?\*/|\()*", re.S)
_GENERIC = ("", "WITH", "FROM", "VALUES", "TABLE")


def _lstrip(sql: str) -> str:
    """The SQL without its leading spaces, comments and opening parentheses."""
    m = _LEAD.match(sql)
    return sql[m.end() :] if m else sql


def kind_of(sql: str, kind: str) -> str:
    """What to call a statement: its first word (INSTALL, RESET, CHECKPOINT ...), or
    ``kind`` (DuckDB's statement type) when that word says nothing (WITH ... INSERT)."""
    m = re.match(r"[A-Za-z_]+", _lstrip(sql))
    word = m.group(0).upper() if m else ""
    return kind if word in _GENERIC else word


def explained(text: str) -> list[str]:
    """The text an EXPLAIN statement explains, found with DuckDB's own lexer (so nested
    comments and dollar-quoted strings read as DuckDB reads them): what follows
    ``EXPLAIN``, ``ANALYZE`` and an option list (``(FORMAT json)``), or the query in
    parentheses that is all that follows. Empty when the text does not start so."""
    try:
        tokens = [t for t in duckdb.tokenize(text) if t[1] != duckdb.token_type.comment]
    except (duckdb.Error, RuntimeError):
        return []
    starts = [pos for pos, _ in tokens] + [len(text)]
    # a token's text: up to the next token, less any comment between them
    words = [
        (text[a:b].split("--")[0].split("/*")[0].strip(), kind)
        for (a, kind), b in zip(tokens, starts[1:], strict=True)
    ]
    if not words or words[0][0].upper() != "EXPLAIN":
        return []
    i = 1
    if i < len(words) and words[i][0].upper() in ("ANALYZE", "ANALYSE"):
        i += 1
    if i < len(words) and words[i] == ("(", duckdb.token_type.operator):
        query = i  # or a query in parentheses: ``EXPLAIN (SELECT 1)``
        depth = 0
        while i < len(words):
            word, kind = words[i]
            if kind == duckdb.token_type.operator:
                depth += word.count("(") - word.count(")")
            i += 1
            if depth <= 0:
                break
        if depth:
            return []
        if i == len(tokens):
            i = query
    return [text[starts[i] :]] if i < len(tokens) else []


def refused(kind: str) -> AnalyticsError:
    """A statement of a kind ``ocb sql`` does not run."""
    return AnalyticsError(
        f"ocb sql is read-only: {kind} is refused", _KIND_HINTS.get(kind, _READ_HINT)
    )


def no_statement() -> InputError:
    return InputError(
        "no SQL statement given (empty, or only comments and ';')",
        'give a SQL statement, e.g. ocb sql "SELECT count(*) FROM events"',
    )


def several(n: int) -> AnalyticsError:
    return AnalyticsError(
        f"ocb sql runs one statement at a time, got {n}",
        "run each statement with its own ocb sql",
    )


def no_files() -> AnalyticsError:
    """DuckDB refused a file, network or extension access (``CONFIG``)."""
    return AnalyticsError(
        "ocb sql reads only the brain's views: file, network and extension access is refused",
        'query the views (list them with: ocb sql "SHOW TABLES"); '
        "save a result with --csv or --json",
    )


TZ = "TIMESTAMP WITH TIME ZONE"


def tz_projection(types: list[str]) -> str | None:
    """A projection that casts every column holding TIMESTAMPTZ (also in lists, structs
    or maps) to TIMESTAMP, by position; None when there is none.

    DuckDB hands Python a TIMESTAMPTZ only through pytz, which we do not depend on;
    the session's zone is UTC, so the cast gives UTC wall time.
    """
    if not any(TZ in t for t in types):
        return None
    return ", ".join(
        f"CAST(#{i} AS {t.replace(TZ, 'TIMESTAMP')})" if TZ in t else f"#{i}"
        for i, t in enumerate(types, 1)
    )


def with_utc(rows: list[tuple[Any, ...]], types: list[str]) -> list[tuple[Any, ...]]:
    """The rows with the zone put back (UTC) on top-level TIMESTAMPTZ values."""
    zoned = {i for i, t in enumerate(types) if t == TZ}
    if not zoned:
        return rows
    return [
        tuple(v.replace(tzinfo=UTC) if i in zoned and v is not None else v for i, v in enumerate(r))
        for r in rows
    ]
