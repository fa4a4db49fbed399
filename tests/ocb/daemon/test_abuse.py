"""A live brain under abuse, against real daemon processes: nothing is imported from the
directory a daemon is started in, a stop is true to what happened, idle clients cannot
lock the command line out, the ``cli`` method runs commands only on its own brain, a
deep brain path still gets a socket, and hostile frames get answers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import msgspec

from ocb.daemon.protocol import PARSE_ERROR, PROTOCOL, USER_ERROR, RpcError, call, connect
from ocb.daemon.server import MAX_CLIENTS
from tests.ocb.daemon.support import (
    DEADLINE,
    ROOT,
    daemon,
    env,
    hello,
    ocb,
    raw,
    rpc,
    start,
    wait_for,
)

OCB_SCRIPT = Path(sys.executable).parent / "ocb"
"""The console script, as a user and an agent host run it."""
QUESTION = "how do I roll back a bad deploy"


def _planted(tmp_path: Path) -> tuple[Path, Path]:
    """A directory holding a ``replay.py`` that leaves a mark when imported and a folder
    named ``ocb``: a start that imports from it is caught either way."""
    here = tmp_path / "caller"
    (here / "ocb").mkdir(parents=True)
    (here / "ocb" / "entry.py").write_text("raise SystemExit('the planted ocb ran')\n")
    mark = tmp_path / "planted-ran"
    (here / "replay.py").write_text(f"open({str(mark)!r}, 'w').write('ran')\n")
    return here, mark


def _user(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``ocb <argv>`` through the console script in ``cwd``, the checkout not on the
    path (only what the virtualenv installs)."""
    e = env()
    e.pop("PYTHONPATH", None)
    return subprocess.run(
        [str(OCB_SCRIPT), *argv], env=e, cwd=cwd, capture_output=True, text=True,
        timeout=DEADLINE,
    )  # fmt: skip


def test_a_detached_daemon_imports_nothing_from_the_callers_directory(
    tmp_path: Path, built: Path, workspace: Path
) -> None:
    here, mark = _planted(tmp_path)
    got = _user("serve", "--detach", "--brain", str(built), "--workspace", str(workspace), cwd=here)
    try:
        assert got.returncode == 0, got.stderr
        h = hello(built)
        assert h is not None and f"pid {h['pid']}" in got.stdout
        assert not mark.exists()
        answer = _user("query", QUESTION, "--brain", str(built), "--json", cwd=here)
        assert answer.returncode == 0, answer.stderr
        assert msgspec.json.decode(answer.stdout)["results"]
    finally:
        stopped = _user("serve", "stop", "--brain", str(built), cwd=here)
    assert stopped.returncode == 0, stopped.stderr
    assert not mark.exists()


def test_ocb_mcp_started_in_a_planted_directory_starts_its_daemon_cleanly(
    tmp_path: Path, built: Path
) -> None:
    import asyncio

    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    here, mark = _planted(tmp_path)
    e = env()
    e.pop("PYTHONPATH", None)
    params = StdioServerParameters(
        command=str(OCB_SCRIPT), args=["mcp", "--brain", str(built)], env=e, cwd=str(here)
    )

    async def go() -> dict[str, object]:
        with (tmp_path / "mcp.err").open("w") as err:
            async with stdio_client(params, errlog=err) as (r, w), ClientSession(r, w) as s:
                await asyncio.wait_for(s.initialize(), DEADLINE)
                got = await s.call_tool("memory_search", {"query": QUESTION, "limit": 2})
                assert not got.is_error, got.content
                assert got.structured_content is not None
                return got.structured_content

    try:
        found = asyncio.run(go())
        assert found["results"] and not found.get("disabled")
        assert hello(built) is not None  # the daemon ocb mcp started
        assert not mark.exists()
    finally:
        ocb("serve", "stop", "--brain", str(built))


def test_stop_waits_for_the_process_and_reports_a_forced_stop(built: Path) -> None:
    proc = start(built)
    try:
        os.kill(proc.pid, signal.SIGSTOP)  # answers nothing, holds the brain's lock
        got = ocb("serve", "stop", "--brain", str(built), "--grace", "1")
        assert got.returncode == 0, got.stderr
        assert proc.poll() is not None  # exited before stop returned
        assert f"daemon pid {proc.pid} held the brain's lock but did not answer" in got.stdout
        assert "SIGKILL" in got.stdout and "acknowledged write" in got.stdout
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
        proc.wait()
    again = start(built)  # the lock is free again
    try:
        got = ocb("serve", "stop", "--brain", str(built))
        assert got.returncode == 0, got.stderr
        assert got.stdout == f"stopped daemon pid {again.pid}\n"
        assert again.poll() is not None
    finally:
        if again.poll() is None:
            again.kill()
        again.wait()


def test_stop_without_a_daemon_is_one_error_line(built: Path) -> None:
    got = ocb("serve", "stop", "--brain", str(built))
    assert got.returncode == 1
    assert got.stderr.splitlines()[0] == f"error: no daemon serves {built}"


_SECOND_SIGNAL = textwrap.dedent(
    """
    import os, signal, sys, time
    from pathlib import Path
    from ocb.daemon.run import DaemonLog, _on_signal

    class Serving:
        stopping = False

        def stop(self):
            self.stopping = True

    log = DaemonLog(Path(sys.argv[1]), None)
    handler = _on_signal(Serving(), Path(sys.argv[2]), log)
    signal.signal(signal.SIGTERM, handler)
    os.kill(os.getpid(), signal.SIGTERM)  # the first: a clean stop begins
    print("stopping", flush=True)
    os.kill(os.getpid(), signal.SIGTERM)  # the second, while stopping: forced
    time.sleep(60)
    """
)


def test_a_signal_while_stopping_ends_the_process_and_says_so(tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    got = subprocess.run(
        [sys.executable, "-c", _SECOND_SIGNAL, str(log), str(tmp_path / "brain")],
        env=env(), capture_output=True, text=True, timeout=DEADLINE, cwd=ROOT,
    )  # fmt: skip
    assert got.returncode == 128 + signal.SIGTERM, got.stderr
    assert got.stdout == "stopping\n"
    assert "stop forced by SIGTERM" in log.read_text()


def test_idle_connections_time_out(built: Path) -> None:
    with daemon(built, "--idle-timeout", "0.5"):
        sock = raw(built)
        sock.settimeout(DEADLINE)
        assert sock.recv(1) == b""  # closed by the daemon, without a word from us
        sock.close()
        assert hello(built) is not None


def test_idle_clients_never_lock_the_command_line_out(built: Path) -> None:
    with daemon(built):
        # a Unix socket refuses at once while its backlog is full: wait for each accept
        idle = [
            wait_for(lambda: connect(built, timeout=DEADLINE), "a connection")
            for _ in range(MAX_CLIENTS)
        ]
        try:
            assert rpc(built, "status")["clients"] >= MAX_CLIENTS
            got = ocb("query", QUESTION, "--brain", str(built), "--json")
            assert got.returncode == 0, got.stderr
            assert msgspec.json.decode(got.stdout)["results"]
            closed = 0
            for s in idle:
                s.setblocking(False)
                try:
                    closed += s.recv(1) == b""
                except BlockingIOError:
                    pass
            assert closed >= 1  # the one idle the longest made room
        finally:
            for s in idle:
                s.close()


def _cli(brain: Path, *argv: str) -> RpcError:
    sock = raw(brain)
    with sock:
        try:
            call(sock, "cli", {"argv": list(argv), "protocol": PROTOCOL})
        except RpcError as exc:
            return exc
    raise AssertionError(f"the daemon ran cli {argv}")


def test_the_cli_method_runs_commands_only_on_its_own_brain(tmp_path: Path, built: Path) -> None:
    other = tmp_path / "other"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.md").write_text("# A\n\nsome text\n")
    with daemon(built) as proc:
        err = _cli(built, "serve", "--brain", str(other), "--workspace", str(ws))
        assert err.code == USER_ERROR and "does not run inside a daemon" in err.message
        err = _cli(built, "serve", "stop", "--brain", str(built))
        assert err.code == USER_ERROR and "ocb serve stop" in err.hint
        err = _cli(built, "init", "--brain", str(other), "--workspace", str(ws))
        assert err.code == USER_ERROR and err.message == f"this daemon serves {built}, not {other}"
        err = _cli(built, "query", QUESTION)
        assert err.code == USER_ERROR and "must name its brain" in err.message
        assert not other.exists()
        assert hello(built)["pid"] == proc.pid  # type: ignore[index]
        ran = rpc(built, "cli", argv=["query", QUESTION, "--brain", str(built)], protocol=PROTOCOL)
        assert ran["exit"] == 0, ran["stderr"]


def test_a_brain_with_a_deep_path_gets_its_socket(tmp_path: Path, built: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60) / "brain"
    deep.parent.mkdir(parents=True)
    built.rename(deep)
    assert len(os.fsencode(deep / "run" / "ocb.sock")) > 108
    with daemon(deep):
        assert (deep / "run" / "ocb.sock").is_socket()
        got = ocb("serve", "status", "--brain", str(deep), "--json")
        assert got.returncode == 0, got.stderr
        assert msgspec.json.decode(got.stdout)["brain"] == str(deep.resolve())
        answer = ocb("query", QUESTION, "--brain", str(deep), "--json")
        assert answer.returncode == 0, answer.stderr
        stopped = ocb("serve", "stop", "--brain", str(deep))
        assert stopped.returncode == 0, stopped.stderr


def test_json_nested_too_deeply_gets_an_answer(built: Path) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    line = b'{"jsonrpc": "2.0", "id": 1, "method": "query", "params": {"text": ' + deep + b"}}\n"
    with daemon(built):
        sock = raw(built)
        with sock:
            sock.sendall(line)
            answer = msgspec.json.decode(sock.makefile("rb").readline())
        assert answer["error"]["code"] == PARSE_ERROR
        assert "nested too deeply" in answer["error"]["message"]
        assert hello(built) is not None


def test_a_second_detached_start_names_the_daemon_that_serves(built: Path) -> None:
    first = ocb("serve", "--detach", "--brain", str(built))
    try:
        assert first.returncode == 0, first.stderr
        pid = hello(built)["pid"]  # type: ignore[index]
        assert first.stdout.startswith(f"serving {built} (pid {pid},")
        second = ocb("serve", "--detach", "--brain", str(built))
        assert second.returncode == 0, second.stderr
        assert second.stdout.startswith(
            f"already served by another client's daemon: {built} (pid {pid},"
        )
        log = (built / "run" / "daemon.log").read_text()
        assert log.count(f"serving {built} (pid {pid}") == 1  # written once, not echoed
    finally:
        ocb("serve", "stop", "--brain", str(built))


def test_no_daemon_beside_a_daemon_says_it_is_the_daemon(built: Path) -> None:
    with daemon(built) as proc:
        got = ocb("--no-daemon", "learn", "--brain", str(built), "--trace", "t1", "--outcome", "1")
        assert got.returncode == 1
        assert got.stderr.splitlines() == [
            f"error: brain {built} is served by its daemon (pid {proc.pid}), which holds its lock",
            "hint: go through the daemon (leave out --no-daemon), or stop it first: "
            f"ocb serve stop --brain {built}",
        ]


def test_the_daemon_starts_no_program_a_client_names(tmp_path: Path, built: Path) -> None:
    planted = tmp_path / "ran"
    program = f"touch {planted}"
    with daemon(built):
        for argv in (
            ("compact", "--extractor", program, "--brain", str(built)),
            ("compact", f"--extractor={program}", "--dry-run", "--brain", str(built)),
        ):
            err = _cli(built, *argv)
            assert err.code == USER_ERROR and "--extractor" in err.message
            assert "ocb --no-daemon compact" in err.hint
    assert not planted.exists()
