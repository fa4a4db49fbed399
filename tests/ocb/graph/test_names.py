"""A folder or file named with a secret never reaches the brain: ``ocb init``, a sync of
the workspace and a sync of named paths skip it, listed with its path redacted; a file
a brain recorded before names were checked is held as it is (nothing names it again);
a workspace whose own path holds a secret is refused. Checked on every byte under the
brain directory."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb_events.clock import TickClock
from ocb_events.errors import WorkspaceError
from ocb_events.schema import FileIndexed, FileMoved, FileRemoved

SECRETS = {
    "aws-access-key-id": "AKIA" + "Q3VZ7XKD2NR5TW8Y",
    "slack-token": "xoxb-" + "2837461950-Kd83nVb2LqZ7wX1p",
    "github-token": "ghp_" + "x9Kq2LmZ7vB4nR8tW1yC6pD3sF5gH0jA2eUo",
    "openai-key": "sk-proj-" + "7Hq2Zx9LmW4vB8nR1tY6cK3p",
}
PLACES = {
    "folder": "keys/{secret}/rotation.md",
    "file": "notes/deploy-{secret}.md",
}
NOTE = "# Rotation\n\nRotate the staging keys every quarter.\n"


def every_byte(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file())


def workspace(root: Path, rel: str) -> Path:
    ws = root / "ws"
    (ws / "notes").mkdir(parents=True)
    (ws / "notes" / "deploy.md").write_text("# Deploy\n\nDeploys run at ten.\n")
    (ws / rel).parent.mkdir(parents=True, exist_ok=True)
    (ws / rel).write_text(NOTE)
    return ws


@pytest.mark.parametrize("place", sorted(PLACES))
@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_a_path_named_with_a_secret_is_skipped_and_never_recorded(
    tmp_path: Path, kind: str, place: str
) -> None:
    secret = SECRETS[kind]
    rel = PLACES[place].format(secret=secret)
    ws, brain = workspace(tmp_path, rel), tmp_path / "brain"
    res = CliRunner().invoke(app, ["init", "--workspace", str(ws), "--brain", str(brain), "--json"])
    assert res.exit_code == 0, res.stderr
    assert secret not in res.stdout + res.stderr
    [skipped] = json.loads(res.stdout)["skipped"]
    assert skipped["path"].startswith(rel.split(secret)[0] + f"[REDACTED:{kind}:")
    assert skipped["reason"] == f"its name holds a secret ({kind}): rename it to index it"
    assert f"warning: skipped {skipped['path']}: its name holds" in res.stderr
    with Brain(brain) as b:
        assert sorted(b.graph.files) == ["notes/deploy.md"]
        again = b.sync(ws, paths=[rel])  # what the daemon's watcher syncs
        assert again.events == 0 and again.skipped == [(skipped["path"], skipped["reason"])]
        assert b.sync(ws).events == 0
        (ws / rel).rename(ws / "notes" / "rotation.md")
        assert b.sync(ws).files_indexed == 1, "renamed, it is indexed"
    assert secret.encode() not in every_byte(brain)


def test_a_file_recorded_before_names_were_checked_is_held_as_it_is(tmp_path: Path) -> None:
    """An old brain that recorded the path (here: with scanning off) records nothing more
    about it: not its removal, not a move, not a change; it is listed with why. Its
    chunks still answer, and a trace records their ids redacted."""
    secret = SECRETS["github-token"]
    rel = PLACES["folder"].format(secret=secret)
    ws = workspace(tmp_path, rel)
    warnings: list[str] = []
    with Brain.create(tmp_path / "b", clock=TickClock(), warn=warnings.append) as b:
        b.set_config("secrets.enabled", False)
        b.sync(ws)
        assert rel in b.graph.files
        b.set_config("secrets.enabled", True)
        seq = b.log.last_seq
        (ws / rel).write_text(NOTE + "\nAsk Priya first.\n")
        report = b.sync(ws)
        assert report.events == 0 and rel in b.graph.files
        [(shown, why)] = report.skipped
        assert secret not in shown and why.startswith("its name holds a secret (github-token), ")
        (ws / rel).rename(ws / "notes" / "rotation.md")
        b.sync(ws)
        b.sync(ws, paths=[rel, "notes/rotation.md"])
        files = (FileIndexed, FileMoved, FileRemoved)
        recorded = [r.event for r in b.log.read(seq + 1) if isinstance(r.event, files)]
        assert [(type(e), e.path) for e in recorded] == [(FileIndexed, "notes/rotation.md")]
        assert rel in b.graph.files, "held until ocb forget --file erases it"
        answer = b.query("rotate the staging keys every quarter")
        assert any(r.id.startswith("keys/") for r in answer.results), "it still answers"
        trace = msgspec.json.encode(b.trace(answer.trace_id))
        assert secret.encode() not in trace and b"keys/[REDACTED:github-token:" in trace
    assert all(secret not in w for w in warnings)
    assert "query_traced.seeds.node_id: github-token redacted before recording" in warnings


def test_a_workspace_whose_path_holds_a_secret_is_refused(tmp_path: Path) -> None:
    secret = SECRETS["slack-token"]
    ws = tmp_path / f"ws-{secret}"
    (ws / "notes").mkdir(parents=True)
    (ws / "notes" / "a.md").write_text("# A\n\nhello\n")
    with Brain.create(tmp_path / "b") as b, pytest.raises(WorkspaceError) as info:
        b.sync(ws)
    assert secret not in info.value.message and "(slack-token)" in info.value.message
    assert info.value.hint
    res = CliRunner().invoke(app, ["init", "--workspace", str(ws), "--brain", str(tmp_path / "c")])
    assert res.exit_code == 1 and res.stderr.startswith("error: the workspace path ")
    assert secret not in res.stderr
    assert secret.encode() not in every_byte(tmp_path / "b") + every_byte(tmp_path / "c")
