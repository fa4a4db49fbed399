"""ocb sql is read-only and confined (one reading statement over the brain's views: no
files, network, extensions, settings or Python objects), renders zoned times without
pytz, and concurrent processes wait for each other instead of refusing."""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
import select
import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb_events.clock import TickClock
from ocb_events.errors import AnalyticsError, InputError
from replay.analytics import AnalyticsStore, _open
from replay.confinement import CONFIG, MAX_CHARS
from replay.history import ANALYTICS
from replay.statements import check_query
from replay.store_lock import StoreLock
from replay.worker import NO_HOME, connect

runner = CliRunner()
QUESTIONS = ["how do I roll back a bad deploy", "who is on call", "postgres pool size"]
COUNT = "SELECT count(*) AS n FROM events"
# one process of a brain's store: catch up (to argv[2], 0 for the end), optionally hold
# the store until a line on stdin ("gate"), then query; prints "last_seq count max_seq"
READER = """
import sys
from pathlib import Path
from ocb_events.log import SegmentLog
from replay.analytics import AnalyticsStore

brain, to_seq, gate = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "gate"
log = SegmentLog(brain / "log", writer=False)
say = lambda msg: print(msg, file=sys.stderr, flush=True)
store = AnalyticsStore(brain / "cache" / "analytics.duckdb", warn=say, waiting=say)
with store:
    folded = store.catch_up(log, to_seq=to_seq or None)
    if gate:
        print("holding", folded, flush=True)
        sys.stdin.readline()
        long = store.query("SELECT count(*) FROM range(3000) a CROSS JOIN range(1000) b")
        print("long", long.rows[0][0], flush=True)
    n, top = store.query("SELECT count(*), max(seq) FROM events").rows[0]
    print(store.last_seq, n, top, flush=True)
log.close()
"""
OCB = [sys.executable, "-c", "from ocb.cli.app import main; main()"]


@pytest.fixture(scope="module")
def history_template(tmp_path_factory: pytest.TempPathFactory, example_brain: Path) -> Path:
    """A brain of the example workspace with a few queries and outcomes, built once."""
    root = tmp_path_factory.mktemp("history")
    shutil.copytree(example_brain, root / "brain")
    with Brain(root / "brain", clock=TickClock(start_ns=1_800_000_000_000_000_000)) as b:
        for i in range(3):
            answer = b.query(QUESTIONS[i], chat_id=f"c{i}")
            b.learn(1.0, trace_id=answer.trace_id, source="human")
    return root


@pytest.fixture
def history(history_template: Path, tmp_path: Path) -> Path:
    """A private copy of the template."""
    shutil.copytree(history_template, tmp_path / "copy", symlinks=True)
    return tmp_path / "copy" / "brain"


def ocb(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def one_error(code: int, out: str, err: str) -> str:
    """The error line of a refused command: exit 1, nothing on stdout, exactly an
    ``error:`` and a ``hint:`` line on stderr."""
    lines = err.splitlines()
    assert code == 1 and out == "" and "Traceback" not in err, err
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("hint: ")
    return lines[0]


def last_seq(brain: Path) -> int:
    with Brain(brain, writer=False) as b:
        return b.log.last_seq


def append(brain: Path, n: int) -> int:
    """Record ``n`` more queries; the new last seq."""
    with Brain(brain, clock=TickClock(start_ns=1_900_000_000_000_000_000)) as b:
        for i in range(n):
            b.query(QUESTIONS[i % 3], chat_id=f"later{i}")
        return b.log.last_seq


# --------------------------------------------------------------------------- confinement


def test_copy_over_the_log_is_refused_and_the_log_stays_as_it_was(history: Path) -> None:
    segments = sorted((history / "log").glob("*.seg"))
    before = {p: p.read_bytes() for p in segments}
    sql = f"COPY (SELECT 'x') TO '{segments[0]}' (FORMAT csv)"
    line = one_error(*ocb("sql", "--brain", str(history), sql))
    assert line == "error: ocb sql is read-only: COPY is refused"
    assert {p: p.read_bytes() for p in segments} == before
    assert json.loads(ocb("sql", "--brain", str(history), "--json", COUNT)[1]) == [
        {"n": last_seq(history)}
    ]


FILE_READS = [
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_blob('/etc/passwd')",
    "SELECT * FROM glob('/etc/*')",
    "SELECT * FROM read_json('/etc/passwd')",
    "SELECT * FROM read_parquet('/etc/passwd')",
    "SELECT * FROM sniff_csv('/etc/passwd')",
    "SELECT count(*) FROM 'https://example.com/data.csv'",
    "SELECT e.seq, f.* FROM events e, read_text('{brain}/log/*.seg') f LIMIT 1",
]


def test_file_reading_functions_are_refused_in_one_line(history: Path, tmp_path: Path) -> None:
    with Brain(history, writer=False) as b, AnalyticsStore(tmp_path / "a.duckdb") as store:
        store.catch_up(b.log)
        for sql in FILE_READS:
            with pytest.raises(AnalyticsError) as err:
                store.query(sql.format(brain=history))
            assert err.value.message == (
                "ocb sql reads only the brain's views: file, network and extension access "
                "is refused"
            ), sql
    line = one_error(*ocb("sql", "--brain", str(history), FILE_READS[0]))
    assert line == f"error: {err.value.message}"


def test_statements_that_change_or_reach_outside_are_refused_by_kind(
    history: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    cases = {
        "INSTALL httpfs": "INSTALL",
        "LOAD httpfs": "LOAD",
        f"ATTACH '{tmp_path / 'other.duckdb'}' AS other": "ATTACH",
        f"EXPORT DATABASE '{tmp_path / 'export'}'": "EXPORT",
        f"IMPORT DATABASE '{tmp_path / 'export'}'": "IMPORT",
        "SET threads = 1": "SET",
        "RESET threads": "RESET",
        "PRAGMA enable_profiling": "PRAGMA",
        "CALL pragma_version()": "CALL",
        "CHECKPOINT": "CHECKPOINT",
        "BEGIN TRANSACTION": "BEGIN",
        "CREATE TABLE t AS SELECT 1": "CREATE",
        "WITH x AS (SELECT 1) INSERT INTO events SELECT * FROM events": "INSERT",
        "EXPLAIN ANALYZE COPY events TO 'out.csv'": "EXPLAIN COPY",
        # what EXPLAIN explains is found as DuckDB lexes it: nested comments, strings
        "EXPLAIN (ANALYZE /* ) SELECT 1 -- */) CREATE TEMP MACRO m(w) AS 'x'": "EXPLAIN CREATE",
        "/* /* */ EXPLAIN SELECT 1 -- */ EXPLAIN ANALYZE CREATE TEMP TABLE t AS SELECT 1": (
            "EXPLAIN CREATE"
        ),
        "EXPLAIN (ANALYZE $$ ) SELECT 1 -- $$) CHECKPOINT": "EXPLAIN CHECKPOINT",
        "PIVOT deltas ON rule USING count(*)": "PIVOT",
    }
    for sql, kind in cases.items():
        line = one_error(*ocb("sql", "--brain", str(history), sql))
        assert line == f"error: ocb sql is read-only: {kind} is refused", sql
    line = one_error(*ocb("sql", "--brain", str(history), "SELECT 1; SELECT 2"))
    assert line == "error: ocb sql runs one statement at a time, got 2"
    assert not (tmp_path / "home").exists()  # no extension directory, no download
    assert not (tmp_path / "export").exists() and not (tmp_path / "other.duckdb").exists()


@pytest.mark.parametrize("sql", ["", ";", "  -- just a comment", " /* nothing */ ; ;\n"])
def test_no_statement_is_one_line_and_builds_nothing(history: Path, sql: str) -> None:
    line = one_error(*ocb("sql", "--brain", str(history), sql))
    assert line == "error: no SQL statement given (empty, or only comments and ';')"
    assert not (history / "cache" / "analytics.duckdb").exists()


def test_reading_statements_run(history: Path, tmp_path: Path) -> None:
    with Brain(history, writer=False) as b, AnalyticsStore(tmp_path / "a.duckdb") as store:
        store.catch_up(b.log)
        for sql in (
            "SHOW TABLES",
            "DESCRIBE deltas",
            "SUMMARIZE events",
            "EXPLAIN SELECT count(*) FROM deltas",
            "EXPLAIN (FORMAT json) SELECT 1",
            "EXPLAIN /* a ( comment */ ANALYZE (SELECT 1)",
            "FROM events LIMIT 1",
            "PIVOT deltas ON rule IN ('pg', 'sync') USING count(*)",
            "  -- a comment first\n(SELECT count(*) FROM events);",
            "SELECT * FROM pragma_table_info('deltas')",
        ):
            assert store.query(sql).rows, sql


def test_queries_run_on_a_confined_connection(history: Path, tmp_path: Path) -> None:
    """The worker's connection (``replay.worker.connect``, what every query runs on):
    confined, locked, in UTC, read-only, within its memory and threads, spilling
    nothing, and given a home that is not the user's."""
    names = (
        "enable_external_access",
        "autoinstall_known_extensions",
        "autoload_known_extensions",
        "python_enable_replacements",  # no scan of a Python variable named in SQL
        "lock_configuration",
        "TimeZone",
        "access_mode",
        "threads",
        "temp_directory",
        "home_directory",
    )
    sql = "SELECT " + ", ".join(f"current_setting('{n}')" for n in names)
    path = tmp_path / "a.duckdb"
    with Brain(history, writer=False) as b, AnalyticsStore(path) as store:
        store.catch_up(b.log)
    con = connect(str(path), dict(CONFIG), memory_mb=100, threads=1)
    try:
        got = con.execute(sql).fetchall()
        limit = con.execute("SELECT current_setting('memory_limit')").fetchall()
    finally:
        con.close()
    assert got == [(False, False, False, False, True, "UTC", "read_only", 1, "", NO_HOME)]
    assert limit == [("100.0 MiB",)]


@pytest.mark.parametrize("read_only", [False, True])
def test_both_connections_are_confined_below_the_statement_check(
    tmp_path: Path, read_only: bool
) -> None:
    """What the statement check refuses, DuckDB refuses as well on our connections; the
    read-write one still loads numpy columns (how a catch-up loads its rows)."""
    path = tmp_path / "a.duckdb"
    _open(str(path), read_only=False).close()
    con = _open(str(path), read_only=read_only)
    try:
        con.register("_batch", {"a": np.arange(3)})
        assert con.execute("SELECT sum(a) FROM _batch").fetchall() == [(3,)]
        for sql in (
            "SELECT * FROM read_text('/etc/passwd')",
            "SELECT * FROM glob('/*')",
            f"COPY (SELECT 1) TO '{tmp_path / 'x.csv'}'",
            f"ATTACH '{tmp_path / 'b.duckdb'}' AS b",
            "LOAD httpfs",
        ):
            with pytest.raises(Exception, match="disabled (by|through) configuration"):
                con.execute(sql)
        with pytest.raises(Exception, match="configuration has been locked"):
            con.execute("SET enable_external_access = true")
    finally:
        con.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.duckdb"]


WRITES = [
    ("COPY events TO 'x.csv'", "COPY"),
    ("install httpfs", "INSTALL"),
    ("Attach 'x.duckdb'", "ATTACH"),
    ("set threads = 1", "SET"),
    ("delete from events", "DELETE"),
    ("export database 'd'", "EXPORT"),
    ("load 'x.duckdb_extension'", "LOAD"),
]
leads = st.lists(
    st.sampled_from([" ", "\n", "\t", "-- note\n", "/* c */", "/* multi\nline */ "]), max_size=4
).map("".join)


@settings(max_examples=30, deadline=None)
@given(leads, st.sampled_from(WRITES), st.sampled_from(["", ";", " ;\n", "-- done"]))
def test_a_writing_statement_is_refused_whatever_surrounds_it(
    lead: str, case: tuple[str, str], tail: str
) -> None:
    sql, kind = case
    with pytest.raises(AnalyticsError) as err:
        check_query(lead + sql + tail)
    assert err.value.message == f"ocb sql is read-only: {kind} is refused"
    with pytest.raises(AnalyticsError, match="one statement at a time, got 2"):
        check_query(f"{lead}SELECT 1;{sql}{tail}")
    with pytest.raises(InputError):
        check_query(lead + tail.replace("-- done", "") + ";")


# --------------------------------------------------------------------------- where it is


def catalog(path: Path) -> list[str]:
    """A statement for every zero-argument table and scalar function and every view of
    DuckDB's catalogs (asked of the worker's own kind of connection), and the ways to
    name the store's files and settings."""
    con = connect(str(path), dict(CONFIG), memory_mb=256, threads=1)
    try:
        functions = con.execute(
            "SELECT DISTINCT function_name, function_type FROM duckdb_functions() "
            "WHERE function_type IN ('table', 'scalar') AND len(parameters) = 0 "
            "ORDER BY ALL"
        ).fetchall()
        views = con.execute(
            "SELECT database_name, schema_name, view_name FROM duckdb_views() ORDER BY ALL"
        ).fetchall()
    finally:
        con.close()
    out = [
        f'SELECT * FROM "{f}"()' if kind == "table" else f'SELECT "{f}"()' for f, kind in functions
    ]
    out += [f'SELECT * FROM "{d}"."{s}"."{v}"' for d, s, v in views]
    return out + [
        "SHOW DATABASES",
        "SHOW ALL TABLES",
        "SELECT * FROM duckdb_databases",
        "SELECT * FROM duckdb_settings(include_all := true)",
        "SELECT current_setting('allowed_paths')",
        "SELECT current_setting('secret_directory')",
        "SELECT * FROM duckdb_extensions()",
        "SELECT * FROM 'notes.csv'",
        "SELECT * FROM query('SELECT * FROM duckdb_databases()')",
    ]


def test_nothing_shows_where_the_brain_is_stored(history: Path) -> None:
    """Every function and view DuckDB has either leaves the brain's path and the home
    directory out of its rows and errors, or is refused by name in one line."""
    needles = (str(history.resolve()), str(history), str(Path.home()))
    refused, shown = set(), []
    with Brain(history, writer=False) as b, AnalyticsStore(history / ANALYTICS) as store:
        store.catch_up(b.log)
        statements = catalog(store.path)
        assert len(statements) > 80
        for sql in statements:
            try:
                text = repr(store.query(sql).rows)
            except AnalyticsError as exc:
                text = exc.message + exc.hint
                if exc.message.startswith("ocb sql does not show where the brain is stored"):
                    refused.add(exc.message.split(": ")[1].split()[0])
                elif exc.message.startswith("ocb sql runs only the statement it is given"):
                    refused.add("query")
            if any(n in text for n in needles):
                shown.append(sql)
    assert shown == []
    assert refused == {
        "current_setting", "duckdb_databases", "duckdb_settings", "pg_settings",
        "pragma_database_list", "query",
    }  # fmt: skip
    line = one_error(*ocb("sql", "--brain", str(history), "FROM pragma_database_list"))
    assert line == (
        "error: ocb sql does not show where the brain is stored: pragma_database_list is refused"
    )


REVEALING = ["duckdb_databases", "pragma_database_list", "duckdb_settings", "current_setting",
             "pg_settings"]  # fmt: skip


def spelled(name: str, upper: list[bool], quoted: bool, schema: str) -> str:
    """``name`` in mixed case, maybe quoted, maybe qualified: DuckDB reads them all."""
    cased = "".join(c.upper() if u else c for c, u in zip(name, itertools.cycle(upper)))
    return schema + (f'"{cased}"' if quoted else cased)


spellings = st.builds(
    spelled,
    st.sampled_from(REVEALING),
    st.lists(st.booleans(), min_size=1),
    st.booleans(),
    st.sampled_from(["", "main.", "system.main.", "pg_catalog.", '"system"."main".']),
)


@settings(max_examples=40, deadline=None)
@given(spellings, leads, st.sampled_from(["()", " ()", "/* x */()", "", " t"]))
def test_a_revealing_name_is_refused_however_it_is_spelled(name: str, lead: str, call: str) -> None:
    with pytest.raises(AnalyticsError) as err:
        check_query(f"{lead}SELECT * FROM {name}{call}")
    assert err.value.message.startswith("ocb sql does not show where the brain is stored: ")
    for fine in (f"SELECT '{name}'", f"SELECT 1 -- {name}", "SELECT query FROM traces"):
        check_query(fine)  # a string, a comment, a column named query
    with pytest.raises(AnalyticsError, match=r"^ocb sql runs only the statement it is given"):
        check_query(f"{lead}SELECT * FROM QUERY /* x */ ('SELECT 1')")


def test_a_statement_over_the_size_limit_is_refused_before_it_is_parsed(history: Path) -> None:
    arms = " UNION ALL ".join(f"SELECT {i} AS x" for i in range(20_000))
    assert len(arms) > MAX_CHARS
    line = one_error(*ocb("sql", "--brain", str(history), arms))
    assert line == (
        f"error: the statement is {len(arms):,} characters long; ocb sql parses at most "
        f"{MAX_CHARS:,}"
    )
    assert not (history / "cache" / "analytics.duckdb").exists()


# --------------------------------------------------------------------------- zoned times


def test_zoned_times_print_as_text_json_and_csv_without_pytz(history: Path) -> None:
    with Brain(history, writer=False) as b:
        first = next(iter(b.log.read(1, 1))).ts
    at = (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=first // 1000)).isoformat()
    assert at.endswith("+00:00")
    sql = (
        "SELECT ts::TIMESTAMPTZ AS t, now() AS n, [ts::TIMESTAMPTZ] AS l, "
        "TIMETZ '12:30:00+05' AS z, INTERVAL 90 MINUTE AS i, "
        "'00000000-0000-0000-0000-00000000000a'::UUID AS u FROM events ORDER BY seq LIMIT 1"
    )
    code, out, err = ocb("sql", "--brain", str(history), "--json", sql)
    assert code == 0 and err == "", err
    (row,) = json.loads(out)
    assert row["t"] == at and row["z"] == "12:30:00+05:00" and row["i"] == "1:30:00"
    assert row["u"] == "00000000-0000-0000-0000-00000000000a"
    assert row["l"] == [at.replace("+00:00", "Z")]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00", row["n"])
    code, out, _ = ocb("sql", "--brain", str(history), "--csv", sql)
    rows = list(csv.reader(io.StringIO(out)))
    assert code == 0 and rows[0] == ["t", "n", "l", "z", "i", "u"] and rows[1][0] == at
    code, out, _ = ocb("sql", "--brain", str(history), "SELECT now() AS n")
    lines = out.splitlines()
    assert code == 0 and lines[0].strip() == "n" and lines[2].endswith("+00:00")
    assert lines[-1] == "(1 row)"


# --------------------------------------------------------------------------- processes


STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _no_process_left() -> Iterator[None]:
    """Every child a test started has ended when it ends (killed if a test failed)."""
    yield
    while STARTED:
        p = STARTED.pop()
        if p.poll() is None:
            p.kill()
        p.communicate()


def spawn(*args: str, stdin: bool = False) -> subprocess.Popen[str]:
    p = subprocess.Popen(
        list(args),
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    STARTED.append(p)
    return p


def reader(brain: Path, to_seq: int = 0, *, gate: bool = False) -> subprocess.Popen[str]:
    return spawn(
        sys.executable, "-c", READER, str(brain), str(to_seq), "gate" if gate else "-", stdin=gate
    )


def release(p: subprocess.Popen[str]) -> None:
    """Let a gated reader go on to its query."""
    assert p.stdin is not None
    p.stdin.write("go\n")
    p.stdin.flush()


def line_of(stream: IO[str] | None, timeout_s: float = 60.0) -> str:
    """The next line of a child's pipe, failing (not hanging) if none comes in time."""
    assert stream is not None
    ready, _, _ = select.select([stream], [], [], timeout_s)
    assert ready, "no line from the child process"
    return stream.readline()


def finish(p: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = p.communicate(timeout=120)
    return p.returncode, out, err


def check_reader(result: tuple[int, str, str], at_least: int) -> int:
    """A reader exited 0, without warnings, and the store it read held every record up
    to the seq it reported (at least the one it asked for)."""
    code, out, err = result
    assert code == 0, err
    assert all(line.startswith("waiting for ") for line in err.splitlines()), err
    seq, n, top = (int(x) for x in out.splitlines()[-1].split())
    assert n == top == seq >= at_least
    return seq


def test_concurrent_readers_never_refuse_each_other(history: Path) -> None:
    """Eight processes on a missing store at once, half of them reading an earlier
    point: one builds, the others wait, find it current, or catch it up further."""
    end = last_seq(history)
    mid = end // 2
    assert not (history / "cache" / "analytics.duckdb").exists()
    procs = [reader(history, mid if i % 2 else 0) for i in range(8)]
    seqs = [check_reader(finish(p), mid if i % 2 else end) for i, p in enumerate(procs)]
    assert all(s in (mid, end) for s in seqs) and seqs[::2] == [end] * 4


def test_a_reader_that_must_catch_up_waits_for_a_running_query(history: Path) -> None:
    """The holder keeps the store open to read (as through a long query) until the
    catcher has said it waits; then the holder queries and closes, and the catcher
    catches up and answers with every record."""
    end = last_seq(history)
    holder = reader(history, gate=True)  # builds the store, then holds it to query
    assert line_of(holder.stdout).split() == ["holding", str(end)]
    later = append(history, 2)
    catcher = spawn(*OCB, "sql", "--brain", str(history), "--json", COUNT)
    waiting = line_of(catcher.stderr)
    assert waiting.startswith("waiting for other processes' queries on the analytics store")
    release(holder)
    code, out, err = finish(holder)
    assert code == 0 and out.splitlines()[-2:] == ["long 3000000", f"{end} {end} {end}"], err
    code, out, err = finish(catcher)
    assert code == 0 and json.loads(out) == [{"n": later}] and err == "", err


def test_catching_up_does_not_hold_the_store_while_querying(history: Path) -> None:
    end = last_seq(history)
    catcher = reader(history, gate=True)  # catches up, then holds the store to query
    holding = line_of(catcher.stdout).split()
    assert holding == ["holding", str(end)]  # it built the store itself
    code, out, err = finish(spawn(*OCB, "sql", "--brain", str(history), "--json", COUNT))
    assert code == 0 and json.loads(out) == [{"n": end}] and err == ""  # no waiting
    assert catcher.poll() is None  # the first process is still in its query
    release(catcher)
    assert finish(catcher)[0] == 0


# --------------------------------------------------------------------------- in process


def test_a_store_ahead_of_this_process_s_log_is_trusted(history: Path, tmp_path: Path) -> None:
    path, warnings = tmp_path / "a.duckdb", list[str]()
    with Brain(history, writer=False) as old:  # sees the log as it is now
        later = append(history, 2)
        with Brain(history, writer=False) as new, AnalyticsStore(path) as store:
            assert store.catch_up(new.log) == later
        with AnalyticsStore(path, warn=warnings.append) as store:
            assert store.catch_up(old.log) == 0 and store.last_seq == later
            assert store.query(COUNT).rows == [(later,)]
    assert warnings == []


def test_waiting_too_long_names_what_was_waited_for(history: Path, tmp_path: Path) -> None:
    path = tmp_path / "a.duckdb"
    other = StoreLock(tmp_path / "a.duckdb.lock")  # another holder of the store
    notes: list[str] = []
    with Brain(history, writer=False) as b:
        assert other.acquire("exclusive", wait_s=0)
        with AnalyticsStore(path, wait_s=0, waiting=notes.append) as store:
            with pytest.raises(AnalyticsError) as err:
                store.catch_up(b.log)
        assert err.value.message == (
            f"waited 0 s for another process to finish catching up the analytics store {path}"
        )
        assert notes == [f"waiting for {err.value.message[len('waited 0 s for ') :]} (up to 0 s)"]
        assert other.acquire("shared", wait_s=0)  # a reader: a catch-up must wait for it
        with AnalyticsStore(path, wait_s=0) as store:
            with pytest.raises(AnalyticsError, match="for other processes' queries on the"):
                store.catch_up(b.log)
        other.close()
        with AnalyticsStore(path, wait_s=0) as store:
            assert store.catch_up(b.log) == b.log.last_seq
        assert _readers_done(path)


def _readers_done(path: Path) -> bool:
    lock = StoreLock(path.with_name(path.name + ".lock"))
    try:
        return lock.acquire("exclusive", wait_s=0)  # every store above released its lock
    finally:
        lock.close()
