"""What ``ocb sql`` may run over the analytics store, and how a refusal reads.

Nothing here opens a connection: ``replay.statements`` parses each query into
statements (on a connection opened with ``CONFIG``) and applies these rules, and the
query runs in a worker process (``replay.worker``) opened with ``CONFIG`` too. A query
is one reading statement of at most ``MAX_CHARS`` characters (DuckDB parses while it
holds Python's lock, about half a second and 200 MB per megabyte): a SELECT (SHOW,
DESCRIBE and SUMMARIZE are SELECTs) or an EXPLAIN of one. Everything else is refused by
kind, with one line and a hint; a file-reading function inside a SELECT is refused by
DuckDB itself (``CONFIG``) and reported by ``no_files``. A PRAGMA is refused: some write
files (profiling output; IMPORT DATABASE parses as one) and each harmless one has a
``pragma_`` table function to SELECT from. The few functions and views that show where
the brain is stored (DuckDB canonicalises the store's path, so it cannot be hidden) or
that run SQL given as text (which no check could read) are refused by name
(``by_name``).
"""

from __future__ import annotations

import re

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
    import duckdb  # its lexer (this module is imported where duckdb need not be)

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


def hint(cls: str) -> str:
    """The hint of a DuckDB error of class ``cls`` (its name) in a query."""
    if cls == "ParserException":
        return "check the SQL syntax (DuckDB dialect); examples in README, History"
    if cls == "BinderException":
        return 'see a view\'s columns with: ocb sql "DESCRIBE deltas"'
    return 'list the tables with: ocb sql "SHOW TABLES"'


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


MAX_CHARS = 64 * 1024
"""The longest statement ``ocb sql`` parses (DuckDB's parser holds Python's lock for about
30 ms and keeps about 13 MB of the process for a statement this long)."""
_WHERE = frozenset(
    {"current_setting", "duckdb_databases", "duckdb_settings", "pg_settings",
     "pragma_database_list"}
)  # fmt: skip
"""Names whose rows show the store's path (or the home directory, among the settings)."""
_AS_TEXT = frozenset({"json_execute_serialized_sql", "query_table"})
"""Functions that run SQL given as text (``query`` too, when called)."""


def too_long(n: int) -> AnalyticsError:
    return AnalyticsError(
        f"the statement is {n:,} characters long; ocb sql parses at most {MAX_CHARS:,}",
        "shorten it: filter with a WHERE or a join on a view instead of listing values",
    )


def _name(text: str) -> str:
    """An identifier as DuckDB reads it: unquoted, case folded."""
    if len(text) > 1 and text[0] == '"' == text[-1]:
        text = text[1:-1].replace('""', '"')
    return text.lower()


def by_name(text: str) -> AnalyticsError | None:
    """The refusal of a statement naming a function or view that shows where the brain
    is stored or runs SQL given as text; None when it names none.

    Names are read with DuckDB's lexer, so a string or a comment holding one is fine
    and a quoted or qualified one is still found.
    """
    import duckdb

    try:
        tokens = duckdb.tokenize(text)
    except (duckdb.Error, RuntimeError):
        return None  # not lexable: the parser refuses it
    starts = [pos for pos, _ in tokens] + [len(text)]
    words = [
        (text[a:b].strip(), kind)
        for (a, kind), b in zip(tokens, starts[1:], strict=True)
        if kind != duckdb.token_type.comment
    ]
    named = (duckdb.token_type.identifier, duckdb.token_type.keyword)
    for i, (word, kind) in enumerate(words):
        if kind not in named:
            continue
        name = _name(word)
        called = i + 1 < len(words) and words[i + 1][0].startswith("(")
        if name in _WHERE:
            return AnalyticsError(
                f"ocb sql does not show where the brain is stored: {name} is refused",
                "its settings are fixed (times in UTC, no files, network or extensions); "
                'query the brain\'s views (list them with: ocb sql "SHOW TABLES")',
            )
        if name in _AS_TEXT or (name == "query" and called):
            return AnalyticsError(
                f"ocb sql runs only the statement it is given: {name}() is refused",
                "write the query out instead of passing it as text",
            )
    return None
