"""Command-line edges: counts below their range, empty entity names and a brain path
under a regular file are each one error line and a hint (exit 1, nothing recorded);
what init says about skipped directories; what the demo leaves behind."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ocb.cli.app import app
from tests.ocb.support import EXAMPLE

runner = CliRunner()


def ocb(*args: object) -> tuple[int, str, str]:
    res = runner.invoke(app, [str(a) for a in args], prog_name="ocb")
    return res.exit_code, res.stdout, res.stderr


def log_bytes(brain: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((brain / "log").glob("*.seg")))


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One brain for the refusals below (none of them records anything)."""
    root = tmp_path_factory.mktemp("input")
    shutil.copytree(EXAMPLE, root / "ws")
    assert ocb("init", "--workspace", root / "ws", "--brain", root / "brain")[0] == 0
    return root / "brain", root / "ws"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["events", "--limit", "-1"], "--limit must be at least 1, got -1"),
        (["events", "--limit", "0"], "--limit must be at least 1, got 0"),
        (["events", "--since", "-5"], "--since must be a seq of 0 or more, got -5"),
        (["train-route", "--min-examples", "0"], "--min-examples must be at least 1, got 0"),
        (["train-route", "--min-examples", "-2"], "--min-examples must be at least 1, got -2"),
        (["query", "x", "--top", "0"], "--top must be at least 1, got 0"),
        (["recall", "x", "--k", "-1"], "--k must be at least 1, got -1"),
        (["recall", "x", "--max-chars", "0"], "--max-chars must be at least 1"),
        (["health", "--window", "0"], "--window must be at least 1, got 0"),
        (["report", "--top", "0"], "--top must be at least 1, got 0"),
        (["what-if", "--from", "0", "--top", "-1"], "--top must be at least 1, got -1"),
        (["audit", "node", "MEMORY.md::0", "--limit", "-1"], "--limit must be at least 0"),
        (["recall", "x", "--entity", ""], "an --entity is empty"),
        (["retain", "x", "--entity", "@"], "an --entity is empty"),
    ],
)
def test_a_count_out_of_range_or_an_empty_entity_is_one_error_line(
    shared: tuple[Path, Path], args: list[str], error: str
) -> None:
    brain, ws = shared
    before, files = log_bytes(brain), sorted(ws.rglob("*.md"))
    code, out, err = ocb(*args, "--brain", brain)
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"error: {error}")
    assert lines[1].startswith("hint: ")
    assert log_bytes(brain) == before and sorted(ws.rglob("*.md")) == files


COMMANDS = [
    ["init", "--workspace", str(EXAMPLE)],
    ["demo", "--workspace", str(EXAMPLE)],
    ["query", "x"],
    ["learn", "--outcome", "1", "--trace", "t1"],
    ["inject", "--content", "x"],
    ["doctor"],
    ["doctor", "--repair"],
    ["events"],
    ["config"],
    ["maintain"],
    ["anchor", "--authority", "canonical", "--node", "a"],
    ["train-route"],
    ["health"],
    ["snapshot"],
    ["replay"],
    ["verify"],
    ["sql", "select 1"],
    ["report"],
    ["audit", "edge", "a", "b"],
    ["audit", "node", "a"],
    ["diff", "--from", "1"],
    ["what-if", "--from", "1"],
    ["kg", "set", "a", "b", "c"],
    ["kg", "get", "a"],
    ["kg", "history", "a"],
    ["retain", "x"],
    ["recall", "x"],
    ["reflect"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a[:2]) for a in COMMANDS])
def test_a_brain_path_under_a_regular_file_is_one_error_line(
    tmp_path: Path, args: list[str]
) -> None:
    file = tmp_path / "file"
    file.write_text("not a directory\n")
    for brain, where in (
        (file / "brain", f"is under {file}, which is a file"),
        (file, "is a file"),
    ):
        code, out, err = ocb(*args, "--brain", brain)
        assert (code, out) == (1, ""), err
        assert err.splitlines() == [
            f"error: brain path {brain} {where}",
            "hint: pass a directory path for --brain",
        ]
    assert file.read_text() == "not a directory\n"


def test_init_lists_each_skipped_directory_once(tmp_path: Path, workspace: Path) -> None:
    for d in ("build", "node_modules/left-pad", "notes/dist"):
        (workspace / d).mkdir(parents=True)
        for i in range(3):
            (workspace / d / f"page-{i}.md").write_text(f"# page {i}\n")
    code, out, err = ocb("init", "--workspace", workspace, "--brain", tmp_path / "b", "--json")
    assert code == 0
    assert err.splitlines() == [
        "warning: skipped build: build output directory",
        "warning: skipped node_modules: dependency directory",
        "warning: skipped notes/dist: build output directory",
    ]
    assert json.loads(out)["skipped"] == [
        {"path": "build", "reason": "build output directory"},
        {"path": "node_modules", "reason": "dependency directory"},
        {"path": "notes/dist", "reason": "build output directory"},
    ]


def test_the_demo_suggests_only_a_brain_that_is_still_there(
    tmp_path: Path, workspace: Path
) -> None:
    code, out, _ = ocb("demo", "--workspace", workspace)
    assert code == 0
    ending = out.strip().split("\n\n")[-1]  # what follows the doctor's report
    assert "removed" in ending
    for path in re.findall(r"--brain (\S+)", ending):
        assert path == "DIR" or Path(path).exists(), ending
    kept = tmp_path / "kept"
    code, out, _ = ocb("demo", "--workspace", workspace, "--brain", kept)
    assert code == 0
    assert out.strip().endswith(f"$ ocb events --brain {kept} --since 0")
    code, out, _ = ocb("events", "--brain", kept, "--limit", "1")
    assert code == 0 and json.loads(out)["seq"] == 1
