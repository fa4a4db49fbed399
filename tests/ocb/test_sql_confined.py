"""ocb sql is read-only and confined (one reading statement over the brain's views: no
files, network, extensions, settings or Python objects) and renders zoned times without
pytz."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ocb.api import Brain
from ocb.cli import app
from ocb_events.clock import TickClock
from ocb_events.errors import AnalyticsError, InputError
from replay.analytics import AnalyticsStore, _open, check_query

runner = CliRunner()
QUESTIONS = ["how do I roll back a bad deploy", "who is on call", "postgres pool size"]
COUNT = "SELECT count(*) AS n FROM events"


@pytest.fixture
def history(built: Path) -> Path:
    with Brain(built, clock=TickClock(start_ns=1_800_000_000_000_000_000)) as b:
        for i in range(3):
            answer = b.query(QUESTIONS[i], chat_id=f"c{i}")
            b.learn(1.0, trace_id=answer.trace_id, source="human")
    return built


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
            "FROM events LIMIT 1",
            "PIVOT deltas ON rule IN ('pg', 'sync') USING count(*)",
            "  -- a comment first\n(SELECT count(*) FROM events);",
            "SELECT * FROM pragma_table_info('deltas')",
        ):
            assert store.query(sql).rows, sql


def test_queries_run_on_a_confined_connection(history: Path, tmp_path: Path) -> None:
    names = (
        "enable_external_access",
        "autoinstall_known_extensions",
        "autoload_known_extensions",
        "python_enable_replacements",  # no scan of a Python variable named in SQL
        "lock_configuration",
        "TimeZone",
    )
    sql = "SELECT " + ", ".join(f"current_setting('{n}')" for n in names)
    with Brain(history, writer=False) as b, AnalyticsStore(tmp_path / "a.duckdb") as store:
        store.catch_up(b.log)
        assert store.query(sql).rows == [(False, False, False, False, True, "UTC")]
        assert store.query("SELECT current_setting('access_mode')").rows == [("read_only",)]


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
