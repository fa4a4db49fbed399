"""``ocb sql`` run in-process keeps the ``sql.*`` limits too: a query past its time, its
memory or its result size ends with one line naming the setting to raise, and the
settings are checked like the others."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ocb.cli.app import app

runner = CliRunner()
ENDLESS = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM t) SELECT count(*) FROM t"
LISTS = "SELECT max(length(l)) FROM (SELECT list(range) l FROM range(1500000000))"
NARROW = "narrow the query (a WHERE on seq or ts, fewer columns, a LIMIT)"


def ocb(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def record(brain: Path, key: str, value: str) -> None:
    code, _, err = ocb("config", "--brain", str(brain), key, value)
    assert code == 0, err


def failed(brain: Path, statement: str) -> list[str]:
    """The two lines of a refused ``ocb sql``: exit 1, nothing on stdout."""
    code, out, err = ocb("sql", "--brain", str(brain), statement)
    assert (code, out) == (1, ""), err
    assert "Traceback" not in err and len(err.splitlines()) == 2, err
    return err.splitlines()


LIMITS = [
    ("sql.timeout_s", "1", ENDLESS, "error: the query ran past its 1 s limit and was stopped",
     f"hint: {NARROW}, or raise the limit: ocb config sql.timeout_s 4"),
    ("sql.memory_mb", "64", LISTS,
     "error: the query needed more than its 64 MiB of memory and was stopped",
     f"hint: {NARROW}, or raise the cap: ocb config sql.memory_mb 256"),
    ("sql.max_result_mb", "1", "SELECT * FROM range(1000000)",
     "error: the query's result is over its 1 MiB limit",
     f"hint: {NARROW}, or raise the limit: ocb config sql.max_result_mb 4"),
]  # fmt: skip


@pytest.mark.parametrize(("key", "value", "statement", "error", "hint"), LIMITS)
def test_a_query_over_a_limit_ends_with_one_line_naming_its_setting(
    built: Path, key: str, value: str, statement: str, error: str, hint: str
) -> None:
    record(built, key, value)
    assert failed(built, statement) == [error, hint]
    code, out, _ = ocb("sql", "--brain", str(built), "--json", "SELECT 42 AS n")
    assert (code, out.strip()) == (0, '[{"n":42}]')


@pytest.mark.parametrize(
    ("key", "value", "rule"),
    [
        ("sql.timeout_s", "0", "above 0 and at most 3600"),
        ("sql.timeout_s", "3601", "above 0 and at most 3600"),
        ("sql.memory_mb", "32", "at least 64 and at most 65536"),
        ("sql.threads", "0", "at least 1 and at most 64"),
        ("sql.max_result_mb", "0", "at least 1 and at most 4096"),
    ],
)
def test_the_limits_are_settings_with_bounds(built: Path, key: str, value: str, rule: str) -> None:
    code, out, err = ocb("config", "--brain", str(built), key, value)
    assert code == 1 and err.splitlines()[0] == f"error: {key} must be {rule}, got {value}"
    code, out, _ = ocb("config", "--brain", str(built), "--json", key)
    assert code == 0 and key in out
