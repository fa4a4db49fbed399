"""Every value DuckDB can return prints, as text, CSV and JSON, without a traceback:
values out of Python's range as DuckDB's text, NaN and infinities as such."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ocb.cli.app import app

runner = CliRunner()
FORMATS = {"text": [], "csv": ["--csv"], "json": ["--json"]}


def sql(brain: Path, statement: str, fmt: str) -> str:
    """The output of ``ocb sql`` in ``fmt``, which must succeed quietly."""
    r = runner.invoke(app, ["sql", "--brain", str(brain), *FORMATS[fmt], statement])
    assert (r.exit_code, r.stderr) == (0, ""), r.stderr
    return r.stdout


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_type_duckdb_has_prints(built: Path, fmt: str) -> None:
    out = sql(built, "SELECT * FROM test_all_types()", fmt)
    if fmt == "json":
        assert len(json.loads(out)) == 3
    elif fmt == "csv":
        assert len(list(csv.reader(io.StringIO(out)))) == 4
    else:
        assert out.rstrip().endswith("(3 rows)")


OUT_OF_RANGE = (
    "SELECT '294247-01-10 04:00:54.775806'::TIMESTAMPTZ AS tz, "
    "'294247-01-10 04:00:54.775806'::TIMESTAMP AS ts, '5877642-06-25 (BC)'::DATE AS d"
)
SHOWN = ["294247-01-10 04:00:54.775806", "294247-01-10 04:00:54.775806", "5877642-06-25 (BC)"]


def test_values_out_of_python_s_range_print_as_duckdb_s_text(built: Path) -> None:
    assert list(json.loads(sql(built, OUT_OF_RANGE, "json"))[0].values()) == SHOWN
    assert list(csv.reader(io.StringIO(sql(built, OUT_OF_RANGE, "csv")))) == [
        ["tz", "ts", "d"],
        SHOWN,
    ]
    assert sql(built, OUT_OF_RANGE, "text").splitlines()[2].split("  ") == SHOWN


NOT_FINITE = (
    "SELECT 'nan'::DOUBLE AS n, 'inf'::DOUBLE AS i, '-inf'::FLOAT AS m, 1.5 AS x, "
    "NULL::DOUBLE AS z, ['nan'::DOUBLE, 2.0] AS l"
)


def test_nan_and_infinities_print_as_such(built: Path) -> None:
    """JSON has no NaN: it gets the strings JavaScript and Python read back."""
    assert json.loads(sql(built, NOT_FINITE, "json")) == [
        {"n": "NaN", "i": "Infinity", "m": "-Infinity", "x": 1.5, "z": None, "l": ["NaN", 2.0]}
    ]
    assert list(csv.reader(io.StringIO(sql(built, NOT_FINITE, "csv"))))[1] == [
        "nan", "inf", "-inf", "1.5", "", "[nan, 2]",
    ]  # fmt: skip
    assert sql(built, NOT_FINITE, "text").splitlines()[2].split() == [
        "nan", "inf", "-inf", "1.5", "NULL", "[nan,", "2]",
    ]  # fmt: skip
