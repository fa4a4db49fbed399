"""The history commands through the CLI: sql (text, JSON, CSV), report, audit; their
errors are one line and a hint, exit 1, and leave the brain as it was."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb.engine.extras import install_command
from ocb_events.clock import TickClock
from replay.tables import TABLES
from tests.golden_files import check
from tests.ocb.support import tree_bytes

runner = CliRunner()
QUESTIONS = ["how do I roll back a bad deploy", "who is on call", "postgres pool size"]


@pytest.fixture
def history(built: Path) -> Path:
    with Brain(built, clock=TickClock(start_ns=1_800_000_000_000_000_000)) as b:
        for i in range(6):
            answer = b.query(QUESTIONS[i % 3], chat_id=f"c{i}")
            b.learn(-1.0 if i == 4 else 1.0, trace_id=answer.trace_id, rule="pg", source="human")
        b.learn(0.5, chat_id="c1", rule="pg", source="self")
    return built


def ocb(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_sql_prints_a_table_json_or_csv(history: Path) -> None:
    sql = "SELECT source, count(*) AS n, avg(reward) AS mean FROM outcomes GROUP BY ALL ORDER BY 1"
    code, out, _ = ocb("sql", "--brain", str(history), "--json", sql)
    assert code == 0
    assert json.loads(out) == [
        {"source": "human", "n": 6, "mean": pytest.approx(4 / 6)},
        {"source": "self", "n": 1, "mean": 0.5},
    ]
    code, out, _ = ocb("sql", "--brain", str(history), "--csv", sql)
    assert code == 0 and list(csv.reader(io.StringIO(out)))[0] == ["source", "n", "mean"]
    assert list(csv.reader(io.StringIO(out)))[2] == ["self", "1", "0.5"]
    code, out, _ = ocb("sql", "--brain", str(history), sql)
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["source", "n", "mean"]
    assert lines[2].split()[:2] == ["human", "6"] and lines[-1] == "(2 rows)"
    code, out, _ = ocb(
        "sql",
        "--brain",
        str(history),
        "--json",
        "SELECT date_trunc('day', ts) d, avg(context_chars) c FROM traces GROUP BY d ORDER BY d",
    )
    rows = json.loads(out)
    assert code == 0 and len(rows) == 1 and rows[0]["d"].endswith("Z") and rows[0]["c"] > 0


def test_sql_errors_are_one_line_with_a_hint_and_change_nothing(history: Path) -> None:
    ocb("sql", "--brain", str(history), "SELECT 1")  # the store exists from here on
    before = tree_bytes(history)
    for sql, fragment in [
        ("SELECT * FROM nope", "nope does not exist"),
        ("SELEC 1", "syntax error"),
        ("DELETE FROM deltas", "read-only: DELETE is refused"),
    ]:
        code, out, err = ocb("sql", "--brain", str(history), sql)
        lines = err.strip().splitlines()
        assert code == 1 and out == "" and "Traceback" not in err
        assert len(lines) == 2 and lines[0].startswith("error: ") and fragment in lines[0]
        assert lines[1].startswith("hint: ")
    code, _, err = ocb("sql", "--brain", str(history), "--json", "--csv", "SELECT 1")
    assert code == 1 and "exclude each other" in err
    code, _, err = ocb("sql", "--brain", str(history.parent / "nothing"), "SELECT 1")
    assert code == 1 and err.startswith("error: ")
    assert tree_bytes(history) == before


def test_a_deleted_store_is_rebuilt_by_the_next_command(history: Path) -> None:
    sql = "SELECT count(*) AS n FROM deltas"
    first = json.loads(ocb("sql", "--brain", str(history), "--json", sql)[1])
    store = history / "cache" / "analytics.duckdb"
    assert store.exists()
    store.unlink()
    assert json.loads(ocb("sql", "--brain", str(history), "--json", sql)[1]) == first
    store.write_bytes(b"garbage" * 1000)
    code, out, err = ocb("sql", "--brain", str(history), "--json", sql)
    assert code == 0 and json.loads(out) == first and "warning: " in err and "rebuilt" in err


def test_report_prints_every_canned_analysis(history: Path, tmp_path: Path) -> None:
    code, out, _ = ocb("report", "--brain", str(history), "--json", "--top", "3")
    assert code == 0
    rep = json.loads(out)
    t = rep["tables"]
    assert set(t) == {
        "queries_per_day",
        "outcomes_by_source",
        "edge_churn",
        "tiers_per_day",
        "maintenance",
    }
    assert [r["queries"] for r in t["queries_per_day"]] == [6]
    assert {r["source"]: r["outcomes"] for r in t["outcomes_by_source"]} == {"human": 6, "self": 1}
    assert t["outcomes_by_source"][0]["negative"] == 1
    assert len(t["edge_churn"]) == 3
    assert t["edge_churn"][0]["changes"] >= t["edge_churn"][-1]["changes"] >= 1
    with Brain(history, writer=False) as b:
        weights = [e.weight for ts in b.graph.out.values() for e in ts.values()]
        edges = len(weights)
        reflex = sum(w >= 0.6 for w in weights)
    last = t["tiers_per_day"][-1]
    assert last["reflex"] + last["habitual"] + last["dormant"] + last["inhibitory"] == edges
    assert last["reflex"] == reflex
    code, out, _ = ocb("report", "--brain", str(history))
    assert code == 0 and "Outcomes by reward source:" in out and "history up to seq" in out
    code, _, err = ocb("report", "--brain", str(history), "--top", "0")
    assert code == 1 and "--top must be at least 1" in err


def test_report_plots_with_the_plot_extra_or_says_how_to_get_it(
    history: Path, tmp_path: Path
) -> None:
    plots = tmp_path / "plots"
    code, _, err = ocb("report", "--brain", str(history), "--plot", str(plots))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert code == 1 and install_command("plot") in err and not plots.exists()
    else:
        assert code == 0
        assert sorted(p.name for p in plots.iterdir()) == [
            "queries_per_day.png",
            "tiers_per_day.png",
        ]
        assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in plots.iterdir())


def test_audit_node_cites_line_ranges_as_every_other_output(history: Path) -> None:
    code, out, _ = ocb("audit", "node", "--brain", str(history), "runbooks/rollback.md::1")
    assert code == 0 and "runbooks/rollback.md#L5-L13" in out
    assert not re.search(r"#L\d+-\d", out)  # never #L7-13
    check("cli/audit-node.txt", out.split("weight changes:")[0])


def test_audit_commands_print_json_and_refuse_unknown_ids(history: Path) -> None:
    with Brain(history, writer=False) as b:
        trace = b.trace(chat_id="c0")
        step = next(s for s in trace.steps if s.chosen != "<STOP>")
    code, out, _ = ocb("audit", "edge", "--brain", str(history), step.node, step.chosen, "--json")
    assert code == 0
    got = json.loads(out)
    assert (got["source"], got["target"], got["exists"]) == (step.node, step.chosen, True)
    causes = [c["cause"] for c in got["changes"] if c["rule"] == "pg"]
    assert causes and causes[0]["kind"] == "outcome"
    assert causes[0]["query"] == QUESTIONS[0] and causes[0]["chat_id"] == "c0"
    code, out, _ = ocb("audit", "edge", "--brain", str(history), step.node, step.chosen)
    assert code == 0 and f"{step.node} -> {step.chosen}: weight" in out and "cause seq" in out
    code, out, _ = ocb("audit", "node", "--brain", str(history), step.node, "--json")
    node = json.loads(out)
    assert code == 0 and node["id"] == step.node and node["accesses"] >= 1
    assert node["life"][0]["action"] == "created"
    code, out, _ = ocb("audit", "node", "--brain", str(history), step.node)
    assert code == 0 and "life:" in out and "fired by" in out
    code, out, err = ocb("audit", "node", "--brain", str(history), step.node + "x")
    assert code == 1 and out == "" and f"did you mean {step.node}" in err
    code, _, err = ocb("audit", "edge", "--brain", str(history), "nowhere.md::0", step.chosen)
    assert code == 1 and "unknown source node 'nowhere.md::0'" in err and "hint: " in err
    for cmd in (["sql"], ["report"], ["audit", "edge"], ["audit", "node"]):
        code, out, _ = ocb(*cmd, "--help")
        assert code == 0 and "Example:" in out


def test_export_writes_parquet_and_refuses_a_foreign_directory(
    history: Path, workspace: Path, tmp_path: Path
) -> None:
    dest = tmp_path / "out" / "brain"
    code, out, err = ocb("export", "--brain", str(history), "--parquet", str(dest), "--json")
    assert (code, err) == (0, "")
    got = json.loads(out)
    assert sorted(got) == ["brain", "brain_id", "bytes", "dir", "last_seq", "views"]
    views = {v["view"]: v for v in got["views"]}
    assert list(views) == list(TABLES)
    assert views["outcomes"]["rows"] == 7 and views["outcomes"]["files"] == 1
    assert got["bytes"] == sum(v["bytes"] for v in got["views"]) > 0
    code, out, _ = ocb("export", "--brain", str(history), "--parquet", str(dest))
    assert code == 0 and out.startswith(f"exported brain brain ({got['brain_id']}) up to seq ")
    assert re.search(r"^  outcomes +7 rows +1 files$", out, re.M)
    before = tree_bytes(workspace)
    code, out, err = ocb("export", "--brain", str(history), "--parquet", str(workspace))
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"error: {workspace} holds files that are no export",
        "hint: choose a new or empty directory, or pass --force to replace its views",
    ]
    assert tree_bytes(workspace) == before
