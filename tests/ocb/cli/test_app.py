"""The ocb CLI: exit codes, exact outputs, help text, and bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ocb.brain import Brain
from ocb.cli.app import app
from tests.golden_files import check
from tests.ocb.cli.support import QUESTION, log_bytes, ocb, one_error

COMMANDS = sorted(c.name or c.callback.__name__ for c in app.registered_commands)  # type: ignore[union-attr]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(command: str) -> None:
    code, out, _ = ocb(command, "--help")
    assert code == 0
    assert "Example:" in out and f"ocb {command}" in out.split("Example:")[1]
    check(f"cli/help-{command}.txt", out)


def test_top_level_help_lists_every_command() -> None:
    code, out, _ = ocb("--help")
    assert code == 0 and all(c in out for c in COMMANDS)
    check("cli/help.txt", out)


def test_init_reports_files_moved_and_chunks_revised(cli_brain: Path, workspace: Path) -> None:
    glossary = workspace / "notes" / "glossary.md"
    glossary.write_text(glossary.read_text().replace("Terms used", "Terms in use", 1))
    (workspace / "runbooks" / "hotfix.md").rename(workspace / "runbooks" / "urgent-fix.md")
    code, out, err = ocb("init", "--workspace", workspace, "--brain", cli_brain, "--json")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert {k: report[k] for k in ("files_changed", "files_moved", "chunks_revised")} == {
        "files_changed": 1,
        "files_moved": 1,
        "chunks_revised": 1,
    }
    assert (report["files_indexed"], report["files_removed"], report["chunks_added"]) == (0, 0, 0)
    (workspace / "runbooks" / "urgent-fix.md").rename(workspace / "runbooks" / "hotfix.md")
    code, out, _ = ocb("init", "--workspace", workspace, "--brain", cli_brain)
    assert code == 0 and out.startswith("indexed 0 new, 0 changed, 1 moved, 0 removed file(s)")


def test_init_query_learn_inject_doctor_outputs(cli_brain: Path, workspace: Path) -> None:
    code, out, err = ocb("init", "--workspace", workspace, "--brain", cli_brain)
    assert (code, err) == (0, "")
    assert (
        out == "indexed 0 new, 0 changed, 0 removed file(s): +0 / -0 chunks, +0 edges (0 events). "
        "brain: 236 nodes, 902 edges.\n"
    )
    code, out, _ = ocb(
        "query", QUESTION, "--brain", cli_brain, "--top", "3", "--json", "--chat-id", "c1"
    )
    assert code == 0
    answer = json.loads(out)
    assert list(answer) == [
        "trace_id",
        "query",
        "chat_id",
        "results",
        "fired",
        "stop_reason",
        "context_chars",
        "context",
        "route",
        "route_mode",
        "route_question",
    ]
    fired_texts = [r["text"] for r in answer["results"] if r["fired"]]
    assert all(t in answer["context"] for t in fired_texts)
    assert len(answer["context"]) >= answer["context_chars"]
    assert [list(r) for r in answer["results"]] == [
        ["id", "source", "text", "score", "fired", "kind"]
    ] * 3
    check("cli/query.json", json.dumps(answer, indent=1) + "\n")
    code, out, _ = ocb("query", QUESTION, "--brain", cli_brain, "--top", "2")
    check("cli/query.txt", out)
    code, out, _ = ocb(
        "learn",
        "--brain",
        cli_brain,
        "--trace",
        answer["trace_id"],
        "--outcome",
        "1",
        "--rule",
        "pg",
        "--json",
    )
    assert code == 0
    learned = json.loads(out)
    assert learned["outcome_seq"] == 46 and learned["trace_id"] == "t44" and learned["deltas"]
    check("cli/learn.json", json.dumps(learned, indent=1) + "\n")
    code, out, _ = ocb(
        "learn",
        "--brain",
        cli_brain,
        "--chat-id",
        "c1",
        "--outcome",
        "-0.5",
        "--rule",
        "heuristic",
        "--again",
    )
    check("cli/learn.txt", out)
    correction = (
        "inject",
        "--brain",
        cli_brain,
        "--type",
        "CORRECTION",
        "--content",
        "Never skip CI for hotfixes",
        "--chat-id",
        "c1",
    )
    code, out, _ = ocb(*correction)
    assert code == 0 and out.startswith("injected correction::1 with ")
    code, out, _ = ocb(*correction)
    assert out == "correction::1 already holds this content; nothing recorded\n"
    code, out, _ = ocb("doctor", "--brain", cli_brain)
    assert code == 0 and out.count("PASS") == 12
    check("cli/doctor.txt", out)


def test_events_prints_json_lines_filtered_by_type(cli_brain: Path) -> None:
    ocb("query", QUESTION, "--brain", cli_brain)
    code, out, _ = ocb(
        "events",
        "--brain",
        cli_brain,
        "--since",
        "0",
        "--type",
        "query_traced",
        "--type",
        "workspace_attached",
    )
    lines = [json.loads(x) for x in out.splitlines()]
    assert code == 0 and [x["event"]["type"] for x in lines] == [
        "workspace_attached",
        "query_traced",
    ]
    assert [x["seq"] for x in lines] == [1, 44] and all(
        x["actor"] in ("sync", "cli") for x in lines
    )
    code, out, _ = ocb("events", "--brain", cli_brain, "--since", "29", "--limit", "1")
    assert [json.loads(x)["seq"] for x in out.splitlines()] == [30]


def test_config_records_settings_and_rejects_unknown_keys(cli_brain: Path) -> None:
    code, out, _ = ocb("config", "--brain", cli_brain, "traversal.max_hops", "4")
    assert (code, out) == (
        0,
        "traversal.max_hops = 4   (recorded)\n"
        "  most hops a walk takes from its seeds\n"
        "  integer, at least 0; default 3\n",
    )
    code, out, _ = ocb("config", "--brain", cli_brain, "--json")
    assert json.loads(out)["settings"]["traversal.max_hops"] == 4
    before = log_bytes(cli_brain)
    code, _, err = ocb("config", "--brain", cli_brain, "traversal.max_hop", "4")
    assert (code, err) == (
        1,
        "error: unknown setting 'traversal.max_hop'\n"
        "hint: did you mean traversal.max_hops, traversal.max_seeds, traversal.max_fired?\n",
    )
    code, _, err = ocb("config", "--brain", cli_brain, "traversal.max_hops", "many")
    assert code == 1 and "must be a finite int" in err
    assert log_bytes(cli_brain) == before


def test_batch_answers_one_json_line_per_query(cli_brain: Path, tmp_path: Path) -> None:
    batch = tmp_path / "q.jsonl"
    batch.write_text(
        "how do I roll back\n"
        '{"qid": "q2", "query": "who is on call", "top": 2}\n'
        '{"qid": "q3", "text": " "}\n'
    )
    code, out, err = ocb("query", "--batch", batch, "--brain", cli_brain, "--top", "3")
    rows = [json.loads(x) for x in out.splitlines()]
    assert code == 1 and err.startswith("error: 1 batch line(s) failed")
    assert [len(r.get("results", [])) for r in rows] == [3, 2, 0]
    assert rows[1]["qid"] == "q2" and rows[2] == {
        "qid": "q3",
        "error": "the query is empty",
        "line": 3,
        "latency_ms": rows[2]["latency_ms"],
    }
    assert all(r["latency_ms"] >= 0 for r in rows)


def test_bad_workspaces_are_refused_without_creating_a_brain(tmp_path: Path) -> None:
    brain = tmp_path / "b"
    code, _, err = ocb("init", "--workspace", tmp_path / "missing", "--brain", brain)
    assert code == 1
    one_error(err, r"error: workspace .*missing does not exist")
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = ocb("init", "--workspace", empty, "--brain", brain)
    assert code == 1
    one_error(err, r"error: workspace .*empty holds no Markdown or text files")
    afile = tmp_path / "a.md"
    afile.write_text("# a\n")
    code, _, err = ocb("init", "--workspace", afile, "--brain", brain)
    assert code == 1
    one_error(err, r"error: workspace .*a.md is a file, not a directory")
    assert not brain.exists()


def test_bad_files_are_skipped_with_a_warning(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "good.md").write_text("# Good\n\nfine\n")
    (ws / "latin.md").write_bytes("caf\xe9".encode("latin-1"))
    code, out, err = ocb("init", "--workspace", ws, "--brain", tmp_path / "b")
    assert code == 0 and err == "warning: skipped latin.md: not UTF-8\n"
    assert "brain: 1 nodes" in out


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["learn", "--trace", "t999", "--outcome", "1"], r"error: unknown trace id 't999'"),
        (["learn", "--chat-id", "nobody", "--outcome", "1"], r"error: unknown chat id 'nobody'"),
        (
            ["learn", "--trace", "t44", "--outcome", "nan"],
            r"error: outcome must be a number in \[-1, 1\], got nan",
        ),
        (
            ["learn", "--trace", "t44", "--outcome", "1.5"],
            r"error: outcome must be a number in \[-1, 1\], got 1.5",
        ),
        (["learn", "--outcome", "1"], r"error: nothing to learn from"),
        (["query", ""], r"error: the query is empty"),
        (["query", "why", "--batch", "q.txt"], r"error: give a question or --batch FILE, not both"),
        (["query", QUESTION, "--mode", "telepathy"], r"error: unknown route mode 'telepathy'"),
        (["inject", "--content", "x", "--type", "RUMOUR"], r"error: unknown node type 'RUMOUR'"),
        (["events", "--type", "query_tracked"], r"error: unknown event type 'query_tracked'"),
    ],
)
def test_bad_input_is_one_error_line_exit_1_and_the_log_is_unchanged(
    cli_brain: Path, args: list[str], pattern: str
) -> None:
    ocb("query", QUESTION, "--brain", cli_brain)  # t44 exists
    before = log_bytes(cli_brain)
    code, out, err = ocb(*args, "--brain", cli_brain)
    assert code == 1 and out == ""
    one_error(err, pattern)
    assert log_bytes(cli_brain) == before


def test_usage_errors_exit_2(cli_brain: Path) -> None:
    code, _, err = ocb("learn", "--brain", cli_brain, "--outcome", "lots")
    assert code == 2 and "Invalid value" in err


def test_missing_brain_names_the_fix(tmp_path: Path) -> None:
    code, _, err = ocb("query", QUESTION, "--brain", tmp_path / "nope")
    assert code == 1
    one_error(err, r"error: no brain at .*nope")


def test_a_locked_brain_names_the_holder(cli_brain: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\nfrom pathlib import Path\nfrom ocb_events.log import SegmentLog\n"
            "log = SegmentLog(Path(sys.argv[1]) / 'log')\n"
            "print('ready', flush=True)\nsys.stdin.read()\n",
            str(cli_brain),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        before = log_bytes(cli_brain)
        code, _, err = ocb("query", QUESTION, "--brain", cli_brain)
        assert code == 1
        one_error(err, rf"error: brain .* is locked by pid {holder.pid}$")
        assert log_bytes(cli_brain) == before
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)
        holder.stdout.close()  # type: ignore[union-attr]


def test_a_corrupted_record_is_reported_by_seq_and_offset(cli_brain: Path) -> None:
    seg = next((cli_brain / "log").glob("*.seg"))
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside an early, large record; valid records follow
    seg.write_bytes(bytes(data))
    for snap in (cli_brain / "snapshots").glob("*.snap"):
        snap.unlink()
    code, _, err = ocb("query", QUESTION, "--brain", cli_brain)
    assert code == 1
    one_error(
        err, r"error: log corrupt at seq \d+ \(segment 0+1\.seg, offset \d+\): checksum mismatch"
    )
    assert seg.read_bytes() == bytes(data)
    code, out, _ = ocb("doctor", "--brain", cli_brain)
    assert code == 1
    assert re.search(
        r"FAIL  log integrity: log corrupt at seq \d+ \(segment 0+1\.seg, offset \d+\)", out
    )
    assert "SKIP  projections match rebuild: the log is unreadable" in out


def test_teach_train_route_and_health_commands(cli_brain: Path, tmp_path: Path) -> None:
    code, out, _ = ocb("query", QUESTION, "--brain", cli_brain, "--json")
    answer = json.loads(out)
    code, out, _ = ocb("events", "--brain", cli_brain, "--type", "query_traced")
    step = next(s for s in json.loads(out.splitlines()[-1])["event"]["steps"] if s["candidates"])
    labels = tmp_path / "labels.jsonl"
    target = step["candidates"][0]["target"]
    labels.write_text(
        json.dumps({"trace_id": answer["trace_id"], "node": step["node"], "chosen": [target]})
        + "\n"
    )
    before = log_bytes(cli_brain)
    code, out, _ = ocb("teach", "--brain", cli_brain, "--labels", labels)
    assert code == 0 and out.startswith("1 label(s): would record (dry run; --apply to record)")
    assert log_bytes(cli_brain) == before
    code, out, _ = ocb("teach", "--brain", cli_brain, "--labels", labels, "--apply", "--json")
    taught = json.loads(out)
    assert code == 0 and taught["applied"] and taught["deltas"]
    labels.write_text("{broken\n")
    code, _, err = ocb("teach", "--brain", cli_brain, "--labels", labels, "--apply")
    assert code == 1
    one_error(err, r"error: 1 malformed label line\(s\): line 1: not JSON")
    code, _, err = ocb("train-route", "--brain", cli_brain)
    assert code == 1
    one_error(err, r"error: only \d+ labelled decision\(s\) to learn routes from")
    ocb("learn", "--brain", cli_brain, "--trace", answer["trace_id"], "--outcome", "1")
    code, out, _ = ocb("train-route", "--brain", cli_brain, "--min-examples", "2", "--json")
    assert code == 0 and json.loads(out)["features"][0] == "weight"
    code, out, _ = ocb("health", "--brain", cli_brain, "--json")
    health = json.loads(out)
    assert code == 0 and health["window"] == 1 and health["findings"] == []
    code, out, _ = ocb("health", "--brain", cli_brain)
    assert code == 0 and out.splitlines()[2] == "healthy"
    code, _, err = ocb("health", "--brain", cli_brain, "--window", "0")
    assert code == 1
    one_error(err, r"error: --window must be at least 1, got 0")


@pytest.mark.parametrize(
    ("key", "value", "pattern"),
    [
        ("traversal.tau", "0", r"traversal.tau must be above 0, got 0"),
        ("traversal.tau", "-1", r"traversal.tau must be above 0, got -1"),
        ("traversal.damping", "1.5", r"traversal.damping must be above 0 and at most 1, got 1.5"),
        ("learning.eta", "-0.1", r"learning.eta must be at least 0, got -0.1"),
        ("maintenance.half_life_days", "-3", r"maintenance.half_life_days must be above 0"),
    ],
)
def test_out_of_range_settings_are_refused(
    cli_brain: Path, key: str, value: str, pattern: str
) -> None:
    before = log_bytes(cli_brain)
    code, _, err = ocb("config", "--brain", cli_brain, key, value)
    assert code == 1
    one_error(err, "error: " + pattern)
    assert log_bytes(cli_brain) == before


def test_the_init_brain_of_a_test_records_what_init_in_the_test_would(
    cli_brain: Path, workspace: Path, tmp_path: Path
) -> None:
    """``cli_brain`` is copied from an ``ocb init`` run once per session: the same
    files and records as an init in the test (the system clock's times aside, and the
    names of caches keyed by them)."""
    fresh = tmp_path / "fresh"
    assert ocb("init", "--workspace", workspace, "--brain", fresh)[0] == 0

    def made(path: Path) -> tuple[list[str], list[tuple[int, str, object]]]:
        files = [p for p in path.rglob("*") if p.is_file() and "cache" not in p.parts]
        names = sorted(str(p.relative_to(path)) for p in files)
        with Brain(path, writer=False) as b:
            return names, [(r.seq, r.actor, r.event) for r in b.log.read()]

    assert made(cli_brain) == made(fresh)
