"""Exporting a brain's history as Parquet: every view read back by a real DuckDB with
the store's counts, partitioned by day, many brains' exports queried with one glob, and
directories that hold something else refused."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from ocb.brain import Brain
from ocb_events.clock import TickClock
from ocb_events.errors import InputError
from replay.parquet import MARKER
from replay.tables import TABLES

QUESTIONS = ["how do I roll back a bad deploy", "who is on call", "postgres pool size"]
DAY_NS = 86_400 * 10**9


def lived(built: Path) -> None:
    """Queries and outcomes over several days (the partitions), then a correction."""
    clock = TickClock(start_ns=1_800_000_000_000_000_000, step_ns=DAY_NS // 4)
    with Brain(built, clock=clock) as b:
        for i in range(9):
            answer = b.query(QUESTIONS[i % 3], chat_id=f"c{i % 2}")
            b.learn(1.0 if i % 3 else -1.0, trace_id=answer.trace_id, rule="pg")
        b.inject("CORRECTION", "Page the on-call first", chat_id="c0", all_fired=True)


def parquet(dest: Path, view: str) -> str:
    return f"read_parquet('{dest}/{view}/*/*.parquet', hive_partitioning = true)"


def test_every_view_reads_back_with_the_store_s_rows(built: Path, tmp_path: Path) -> None:
    lived(built)
    dest = tmp_path / "export"
    with Brain(built, writer=False) as b:
        got = b.export_parquet(dest)
        counts = {v: b.sql(f"SELECT count(*) FROM {v}").rows[0][0] for v in TABLES}
        columns = {v: b.sql(f"SELECT * FROM {v} LIMIT 0").columns for v in TABLES}
        days = b.sql("SELECT count(DISTINCT CAST(ts AS DATE)) FROM traces").rows[0][0]
        last = b.log.last_seq
    assert {v.view: v.rows for v in got.views} == counts
    assert got.last_seq == last and got.brain == "brain" and len(got.brain_id) == 16
    con = duckdb.connect()
    for view, n in counts.items():
        if not n:
            assert not (dest / view).exists()
            continue
        cols = columns[view]
        row = con.execute(
            f"SELECT count(*), count(DISTINCT brain_id), min(brain), count(DISTINCT day) "
            f"FROM {parquet(dest, view)}"
        ).fetchone()
        assert row == (n, 1, "brain", row[3]) and row[3] >= 1
        names = [d[0] for d in con.execute(f"SELECT * FROM {parquet(dest, view)}").description]
        assert names == [*cols, "brain_id", "brain", "day"]
    assert days > 1
    per_day = con.execute(f"SELECT count(DISTINCT day) FROM {parquet(dest, 'traces')}").fetchone()
    assert per_day == (days,) and len(list((dest / "traces").glob("day=*"))) == days
    steps = con.execute(
        f"SELECT count(*) FROM {parquet(dest, 'steps')} s "
        f"JOIN {parquet(dest, 'traces')} t USING (seq) WHERE s.day = t.day"
    ).fetchone()
    assert steps == (counts["steps"],)  # a step lies in its trace's day
    assert json.loads((dest / MARKER).read_text())["last_seq"] == last


def test_brains_exported_side_by_side_are_one_glob_away(
    built: Path, workspace: Path, tmp_path: Path
) -> None:
    lived(built)
    other = tmp_path / "other"
    with Brain.create(other, clock=TickClock(start_ns=5)) as o:
        o.sync(workspace)
        o.learn(1.0, trace_id=o.query(QUESTIONS[0]).trace_id, rule="pg")
    root = tmp_path / "history"
    for path in (built, other):
        with Brain(path, writer=False) as b:
            b.export_parquet(root / path.name)
    con = duckdb.connect()
    got = con.execute(
        f"SELECT brain, count(*) FROM read_parquet('{root}/*/traces/*/*.parquet', "
        "hive_partitioning = true) GROUP BY brain ORDER BY brain"
    ).fetchall()
    assert got == [("brain", 9), ("other", 1)]
    ids = con.execute(
        f"SELECT count(DISTINCT brain_id) FROM read_parquet('{root}/*/events/*/*.parquet')"
    ).fetchone()
    assert ids == (2,)


def test_a_directory_of_something_else_is_refused_unless_forced(
    built: Path, workspace: Path, tmp_path: Path
) -> None:
    dest = tmp_path / "export"
    with Brain(built, writer=False) as b:
        b.export_parquet(dest)
        again = b.export_parquet(dest)  # its own earlier export: replaced
        assert again.views == b.export_parquet(dest).views
        with pytest.raises(InputError, match="holds files that are no export"):
            b.export_parquet(workspace)
        with pytest.raises(InputError, match="is a file"):
            b.export_parquet(workspace / "notes" / "glossary.md")
    other = tmp_path / "other"
    with Brain.create(other, clock=TickClock(start_ns=5)) as o:
        o.sync(workspace)
        with pytest.raises(InputError, match="another brain's export") as err:
            o.export_parquet(dest)
        assert "`force`" in err.value.hint and err.value.params == ("force",)
        o.export_parquet(dest, force=True)
    marker = json.loads((dest / MARKER).read_text())
    assert marker["brain"] == "other"
    assert not list(dest.glob(".ocb-export-*"))
