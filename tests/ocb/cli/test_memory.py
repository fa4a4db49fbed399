"""retain and recall through the CLI: text and JSON output, and bad input that exits 1
with one error line and one hint, leaving the brain and the workspace as they were."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from tests.ocb.memory.support import LOGS, clock

runner = CliRunner()


@pytest.fixture
def cli_mem(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    for rel, text in LOGS.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text, encoding="utf-8")
    b, _ = Brain.init(tmp_path / "brain", ws, clock=clock())
    b.close()
    return tmp_path / "brain", ws


def ocb(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_recall_json_carries_the_retrieval_contract(cli_mem: tuple[Path, Path]) -> None:
    brain, _ = cli_mem
    code, out, _ = ocb(
        "recall", "rolled back", "--between", "2026-11-21", "2026-11-21", "--brain", str(brain),
        "--json",
    )  # fmt: skip
    assert code == 0
    got = json.loads(out)
    assert got["trace_id"].startswith("r") and got["dropped"] == 0
    (item,) = got["results"]
    assert {k: item[k] for k in ("source", "text", "kind", "day", "entities", "via")} == {
        "source": "memory/2026-11-21.md#L4",
        "text": "the Friday deploy was rolled back",
        "kind": "B",
        "day": "2026-11-21",
        "entities": ["deploy"],
        "via": [],
    }
    assert item["score"] == pytest.approx(
        0.4 * item["parts"]["match"] + 0.35 * 0.9 + 0.25 * item["parts"]["access"], abs=1e-5
    )


def test_recall_explain_shows_score_parts_and_entity_paths(cli_mem: tuple[Path, Path]) -> None:
    brain, _ = cli_mem
    code, out, _ = ocb(
        "recall", "performance regressed", "--associative-depth", "2", "--explain",
        "--brain", str(brain),
    )  # fmt: skip
    assert code == 0
    assert "score = 0.4*match " in out
    assert "via @app -> @slow-endpoint -> @database" in out
    assert out.splitlines()[-1].startswith("4 fact(s), ")


def test_opinion_recall_shows_confidence(cli_mem: tuple[Path, Path]) -> None:
    brain, _ = cli_mem
    code, out, _ = ocb("recall", "--entity", "Peter", "--kind", "O", "--brain", str(brain))
    assert code == 0
    assert (
        out.splitlines()[0]
        == " 1. [O c=0.80] 2026-11-20 memory/2026-11-20.md#L8  "
        + (out.splitlines()[0].rsplit(" ", 1)[1])
    )
    assert "prefers short written updates over meetings  (@Peter)" in out


def test_retain_writes_and_reports(cli_mem: tuple[Path, Path]) -> None:
    brain, ws = cli_mem
    code, out, _ = ocb(
        "retain", "Sarah is leaving next month", "--type", "B", "-e", "Sarah",
        "--salience", "0.95", "--brain", str(brain), "--json",
    )  # fmt: skip
    assert code == 0
    got = json.loads(out)
    assert (
        got["created"] is True
        and got["bullet"] == "- B(s=0.95) @Sarah: Sarah is leaving next month"
    )
    path, line = got["source"].split("#L")
    assert (ws / path).read_text().splitlines()[int(line) - 1] == got["bullet"]
    code, out, _ = ocb("retain", "Sarah is leaving next month", "-t", "B", "--brain", str(brain))
    assert code == 0 and out.startswith(f"already known: {got['id']} at ")


@pytest.mark.parametrize(
    ("args", "error", "hint"),
    [
        (["retain", "x", "--salience", "2"], "salience 2 is outside [0, 1]", "give a salience"),
        (["retain", "x", "-t", "O", "--confidence", "-1"], "confidence -1 is outside", "give a"),
        (["retain", "x", "--type", "Z"], "unknown fact kind 'Z'", "use W (world)"),
        (["recall", "--entity", "Petr"], "unknown entity", "did you mean Peter?"),
        (["recall", "x", "--since", "soon"], "cannot read --since 'soon'", "give a span"),
        (["recall", "x", "--between", "2026-11-02", "nope"], "cannot read --between end", "write"),
        (["recall", "x", "--kind", "Q"], "unknown fact kind 'Q'", "use W (world)"),
        (["recall", "x", "--min-salience", "3"], "min salience 3 is outside", "give a"),
        (["recall", "x", "--entity", ""], "an --entity is empty", "name the entity"),
        (["recall", "x", "-e", "Peter", "-e", "@"], "an --entity is empty", "name the entity"),
        (["retain", "x", "--entity", ""], "an --entity is empty", "name the entity"),
        (["retain", "x", "-e", " @ "], "an --entity is empty", "name the entity"),
    ],
)
def test_bad_input_is_one_error_and_a_hint(
    cli_mem: tuple[Path, Path], args: list[str], error: str, hint: str
) -> None:
    brain, ws = cli_mem
    files = {p: p.read_bytes() for p in sorted(ws.rglob("*.md"))}
    with Brain(brain, writer=False) as b:
        seq = b.log.last_seq
    code, out, err = ocb(*args, "--brain", str(brain))
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: ") and error in lines[0]
    assert lines[1].startswith(f"hint: {hint}")
    assert {p: p.read_bytes() for p in sorted(ws.rglob("*.md"))} == files
    with Brain(brain, writer=False) as b:
        assert b.log.last_seq == seq


def test_retain_into_a_directory_linked_out_of_the_workspace_is_one_error(
    cli_mem: tuple[Path, Path], tmp_path: Path
) -> None:
    brain, ws = cli_mem
    outside = tmp_path / "elsewhere"
    (ws / "memory").rename(outside)
    os.symlink(outside, ws / "memory")
    files = {p: p.read_bytes() for p in sorted(outside.rglob("*"))}
    with Brain(brain, writer=False) as b:
        seq = b.log.last_seq
    code, out, err = ocb("retain", "the standup moved to ten", "--brain", str(brain))
    assert (code, out) == (1, "")
    assert re.fullmatch(
        r"error: will not write memory/\d{4}-\d\d-\d\d\.md: memory is a symlinked directory;"
        r" nothing was written\n"
        r"hint: make memory a plain directory of the workspace\n",
        err,
    ), err
    assert {p: p.read_bytes() for p in sorted(outside.rglob("*"))} == files
    with Brain(brain, writer=False) as b:
        assert b.log.last_seq == seq
