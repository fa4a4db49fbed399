"""The commands around the daemon: serve --detach, status and stop; serve --stdio for a
host that spawns it; and watch, the watcher alone."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from ocb.brain import Brain
from tests.ocb.daemon.support import DEADLINE, env, hello, ocb, wait_for


def test_detach_status_and_stop(built: Path) -> None:
    started = ocb("serve", "--brain", str(built), "--detach")
    assert started.returncode == 0, started.stderr
    pid = hello(built)["pid"]  # type: ignore[index]
    assert f"pid {pid}" in started.stdout
    st = ocb("serve", "status", "--brain", str(built), "--json")
    assert st.returncode == 0 and json.loads(st.stdout)["pid"] == pid
    assert json.loads(st.stdout)["log"] == "local"
    text = ocb("serve", "status", "--brain", str(built))
    assert f"daemon pid {pid}" in text.stdout and "seq" in text.stdout
    assert "  log " not in text.stdout  # a local log is the default, not worth a line
    stopped = ocb("serve", "stop", "--brain", str(built))
    assert stopped.returncode == 0 and f"stopped daemon pid {pid}" in stopped.stdout
    assert hello(built) is None
    none = ocb("serve", "status", "--brain", str(built))
    assert none.returncode == 1 and none.stderr.startswith(f"error: no daemon serves {built}")


def test_detach_builds_a_new_brain_from_its_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "notes").mkdir(parents=True)
    (ws / "notes" / "a.md").write_text("# Deploys\n\nDeploys freeze on Fridays.\n")
    brain = tmp_path / "new" / ".ocb"
    started = ocb("serve", "--brain", str(brain), "--workspace", str(ws), "--detach")
    assert started.returncode == 0, started.stderr
    try:
        assert hello(brain) is not None
        assert (brain / "log").is_dir()
    finally:
        assert ocb("serve", "stop", "--brain", str(brain)).returncode == 0


def test_stdio_serves_one_client_until_stdin_ends(built: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ocb.entry", "serve", "--brain", str(built), "--stdio"],
        env=env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    reqs = [
        {"jsonrpc": "2.0", "id": 1, "method": "hello"},
        {"jsonrpc": "2.0", "id": 2, "method": "query", "params": {"text": "roll back"}},
        {"jsonrpc": "2.0", "id": 3, "method": "nope"},
    ]
    out, _ = proc.communicate(
        "".join(json.dumps(r) + "\n" for r in reqs).encode(), timeout=DEADLINE
    )
    answers = [json.loads(line) for line in out.decode().splitlines()]
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert answers[0]["result"]["pid"] == proc.pid
    assert answers[1]["result"]["results"] and answers[2]["error"]["code"] == -32601
    assert proc.returncode == 0
    with Brain(built, writer=False) as b:
        assert answers[1]["result"]["trace_id"] in b.state("traces").by_id


def test_watch_alone_syncs_changes_until_interrupted(built: Path) -> None:
    ws = Path(Brain(built, writer=False).graph.workspace)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ocb.entry", "watch", "--brain", str(built)],
        env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    first = proc.stderr.readline()  # type: ignore[union-attr]
    assert first.startswith("synced: "), first  # the reconcile
    line = proc.stderr.readline()  # type: ignore[union-attr]
    assert line.startswith("watching "), line

    def indexed() -> bool:
        (ws / "notes" / "watched.md").write_text("# Watched\n\nnarwhal tokens\n")
        with Brain(built, writer=False) as b:  # a reader beside the watcher's lock
            return "notes/watched.md" in b.graph.files

    wait_for(indexed, "the change to be synced")
    proc.send_signal(signal.SIGINT)
    assert proc.wait(DEADLINE) == 0
    proc.stderr.close()  # type: ignore[union-attr]


def test_reembed_through_the_daemon_switches_the_served_brain(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "notes").mkdir(parents=True)
    (ws / "notes" / "a.md").write_text("# Deploys\n\nDeploys freeze on Fridays.\n")
    (ws / "notes" / "b.md").write_text("# Billing\n\nPriya owns the billing service.\n")
    brain = tmp_path / "b"
    assert ocb("serve", "--brain", str(brain), "--workspace", str(ws), "--detach").returncode == 0
    try:
        got = ocb("reembed", "--embedder", "minilm", "--brain", str(brain), "--json")
        assert got.returncode == 0, got.stderr
        assert json.loads(got.stdout)["after"] == "hash-ngram-v1-d384+minilm-l6-v2-int8@0.5"
        answer = ocb("query", "who looks after invoices", "--brain", str(brain), "--json")
        assert json.loads(answer.stdout)["results"][0]["source"].startswith("notes/b.md#L")
        refused = ocb("init", "--workspace", str(ws), "--brain", str(brain), "--embedder", "hash")
        assert refused.returncode == 1
        assert f"ocb reembed --embedder hash --brain {brain}" in refused.stderr
    finally:
        assert ocb("serve", "stop", "--brain", str(brain)).returncode == 0
    with Brain(brain, writer=False) as b:  # the daemon may still be letting go of its lock
        assert b.state("vectors").spec == "minilm"
