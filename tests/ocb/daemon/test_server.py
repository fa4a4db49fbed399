"""A real daemon on a real socket: the methods mirror the facade, errors carry hints,
the CLI is answered by the daemon with the output and exit code of an in-process run,
and the client path loads neither numpy nor typer."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ocb.brain import Brain
from ocb.daemon.protocol import INVALID_PARAMS, METHOD_NOT_FOUND, PROTOCOL, USER_ERROR, RpcError
from tests.ocb.daemon.support import DEADLINE, daemon, env, hello, ocb, rpc, stop


def test_hello_status_and_private_files(built: Path) -> None:
    with daemon(built) as proc:
        h = hello(built)
        assert h is not None
        assert h["protocol"] == PROTOCOL and h["pid"] == proc.pid and h["seq"] > 0
        s = rpc(built, "status")
        assert s["pid"] == proc.pid and s["seq"] == h["seq"] and s["watched_files"] > 0
        run = built / "run"
        assert stat.S_IMODE(run.stat().st_mode) == 0o700
        assert stat.S_IMODE((run / "ocb.sock").stat().st_mode) == 0o600
        assert stop(proc) == 0
    assert not (built / "run" / "ocb.sock").exists()
    assert "stopped" in (built / "run" / "daemon.log").read_text()


def test_methods_answer_like_the_facade(built: Path) -> None:
    with daemon(built) as proc:
        ans = rpc(built, "query", text="how do I roll back a bad deploy", top=3)
        assert ans["trace_id"] and ans["results"]
        hit = ans["results"][0]
        assert {"id", "source", "text", "score"} <= set(hit)
        rep = rpc(built, "learn", outcome=1.0, trace_id=ans["trace_id"])
        assert rep["trace_id"] == ans["trace_id"]
        kg = rpc(
            built, "kg", action="set", subject="tool:render", predicate="env", value="DISPLAY=:0"
        )
        assert kg
        got = rpc(built, "kg", subject="tool:render")
        assert "DISPLAY=:0" in json.dumps(got)
        evs = rpc(built, "events", types=["outcome_recorded"])
        assert [e["event"]["trace_id"] for e in evs] == [ans["trace_id"]]
        rows = rpc(built, "sql", statement="SELECT count(*) AS n FROM outcomes")
        assert rows == [{"n": 1}]
        assert stop(proc) == 0
    with Brain(built, writer=False) as b:  # what the daemon acknowledged is in the log
        assert b.trace(ans["trace_id"]).trace_id == ans["trace_id"]


def test_errors_carry_the_hint_and_the_daemon_goes_on(built: Path) -> None:
    with daemon(built) as proc:
        with pytest.raises(RpcError) as e:
            rpc(built, "learn", outcome=1.0, chat_id="no-such-chat")
        assert e.value.code == USER_ERROR and e.value.hint and e.value.kind == "InputError"
        with pytest.raises(RpcError) as e:
            rpc(built, "nope")
        assert e.value.code == METHOD_NOT_FOUND and "query" in e.value.hint
        with pytest.raises(RpcError) as e:
            rpc(built, "query", text=3)
        assert e.value.code == INVALID_PARAMS
        with pytest.raises(RpcError) as e:
            rpc(built, "query", text="x", bogus=1)
        assert e.value.code == INVALID_PARAMS
        assert hello(built) is not None
        assert stop(proc) == 0


def test_cli_is_answered_by_the_daemon_as_in_process(built: Path, tmp_path: Path) -> None:
    args = ["kg", "get", "tool:none", "--brain", str(built)]
    alone = ocb(*args)  # no daemon yet: in-process
    with daemon(built) as proc:
        served = ocb(*args)
        assert (served.returncode, served.stdout, served.stderr) == (
            alone.returncode,
            alone.stdout,
            alone.stderr,
        )
        assert alone.returncode == 1 and alone.stderr.startswith("error: ")
        # a relative --brain and $OCB_BRAIN name the same daemon
        rel = os.path.relpath(built, tmp_path)
        q = ocb("query", "roll back", "--brain", rel, "--json", cwd=tmp_path)
        assert q.returncode == 0, q.stderr
        trace = json.loads(q.stdout)["trace_id"]
        le = ocb("learn", "--outcome", "1", "--trace", trace, extra={"OCB_BRAIN": str(built)})
        assert le.returncode == 0, le.stderr
        # a reader in-process works read-only beside the daemon; a writer names it
        ev = ocb("events", "--brain", str(built), "--type", "outcome_recorded", "--no-daemon")
        assert ev.returncode == 0 and trace in ev.stdout
        w = ocb("learn", "--outcome", "1", "--trace", trace, "--brain", str(built), "--no-daemon")
        assert w.returncode == 1 and f"pid {proc.pid}" in w.stderr
        assert rpc(built, "status")["requests"] >= 3
        assert stop(proc) == 0


PROBE = """
import os, sys
from ocb.daemon.client import forward
code = forward(sys.argv[1:], os.environ, os.getcwd())
mods = [m in sys.modules for m in ("numpy", "typer", "ocb.brain")]
print(code, *mods, file=sys.stderr)
"""


def test_the_client_path_loads_neither_numpy_nor_typer(built: Path) -> None:
    with daemon(built) as proc:
        got = subprocess.run(
            [sys.executable, "-c", PROBE, "query", "roll back", "--brain", str(built), "--json"],
            env=env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert got.returncode == 0, got.stderr
        assert json.loads(got.stdout)["results"]
        assert got.stderr.strip().splitlines()[-1] == "0 False False False"
        assert stop(proc) == 0


def test_sql_through_the_daemon_is_confined(built: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret\n")
    refused = [
        f"SELECT * FROM read_text('{outside}')",
        f"SELECT * FROM read_csv('{outside}')",
        f"COPY (SELECT 1) TO '{tmp_path / 'x.csv'}'",
        f"ATTACH '{tmp_path / 'x.db'}' AS x",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET enable_external_access = true",
    ]
    with daemon(built) as proc:
        for sql in refused:
            with pytest.raises(RpcError) as e:
                rpc(built, "sql", statement=sql)
            assert e.value.code == USER_ERROR, sql
            assert "top secret" not in e.value.message
        assert not (tmp_path / "x.csv").exists() and not (tmp_path / "x.db").exists()
        assert stop(proc) == 0


_SIGNAL_ON_A_THREAD = """
import signal, sys, threading
from pathlib import Path
from ocb.daemon.methods import methods
from ocb.daemon.run import serve
from tests.ocb.daemon.support import hello, wait_for

brain = Path(sys.argv[1])

def kill_from_here():
    wait_for(lambda: hello(brain) is not None, "the daemon to answer")
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)  # lands on this thread

threading.Thread(target=kill_from_here, daemon=True).start()
serve(brain, None, methods)
"""


def test_a_signal_that_lands_on_another_thread_stops_the_daemon(built: Path) -> None:
    """A process-directed signal may be handled by any thread, while the main thread
    waits in select: the daemon must wake and stop all the same (no client comes)."""
    proc = subprocess.Popen([sys.executable, "-c", _SIGNAL_ON_A_THREAD, str(built)], env=env())
    assert stop_waiting(proc) == 0
    assert not (built / "run" / "ocb.sock").exists()


def stop_waiting(proc: subprocess.Popen[bytes]) -> int:
    try:
        return proc.wait(DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        msg = "the daemon did not stop on a signal handled by another thread"
        raise AssertionError(msg) from None


def test_read_shows_what_the_brain_recorded_never_a_secret_or_a_hidden_file(
    built: Path,
) -> None:
    ws = Path(Brain(built, writer=False).graph.workspace)
    token = "ghp_" + "x9Kq2LmZ7vB4nR8tW1yC6pD3sF5gH0jA2eUo"
    (ws / "notes" / "keys.md").write_text(f"# Keys\n\ntoken: {token}\n")
    (ws / ".env").write_text(f"TOKEN={token}\n")
    with daemon(built) as proc:
        got = rpc(built, "read", path="notes/keys.md")
        assert token not in got["text"] and "[REDACTED:" in got["text"]
        with pytest.raises(RpcError) as err:
            rpc(built, "read", path=".env")
        assert err.value.code == USER_ERROR and token not in err.value.message
        assert stop(proc) == 0
