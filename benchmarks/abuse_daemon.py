"""Abuse trials of the daemon itself: where it starts from, how it stops, who may hold its
connections, what its ``cli`` method runs, a deep brain path, hostile frames, start
races, and who may read a brain. Each runs against real ``ocb`` processes."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import msgspec

from benchmarks.abuse_support import ENV, Trial, example_brain, run
from benchmarks.live_support import ocb
from ocb.daemon.protocol import PROTOCOL, RpcError, call, connect
from ocb.daemon.server import MAX_CLIENTS

QUESTION = "how do I roll back a bad deploy"
SCRIPT = Path(sys.executable).parent / "ocb"
"""The installed console script, as users and hosts run it."""


def _hello(brain: Path) -> dict[str, object] | None:
    sock = connect(brain, timeout=10.0)
    if sock is None:
        return None
    try:
        with sock:
            got: dict[str, object] = call(sock, "hello")
            return got
    except (RpcError, OSError):
        return None


def _wait(cond: object, seconds: float = 60.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def _serve(brain: Path, *args: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        ocb("serve", "--brain", str(brain), *args), env=ENV,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    if not _wait(lambda: (_hello(brain) or {}).get("pid") == proc.pid):
        proc.kill()
        raise RuntimeError("the daemon did not start")
    return proc


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def _plant(root: Path) -> tuple[Path, Path]:
    here = root / "caller"
    (here / "ocb").mkdir(parents=True)
    (here / "ocb" / "entry.py").write_text("raise SystemExit('the planted ocb ran')\n")
    mark = root / "planted-ran"
    (here / "replay.py").write_text(f"open({str(mark)!r}, 'w').write('ran')\n")
    return here, mark


def _user(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [str(SCRIPT), *argv], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def planted_serve(root: Path) -> tuple[bool, str]:
    _, brain = example_brain(root)
    here, mark = _plant(root)
    got = _user("serve", "--detach", "--brain", str(brain), cwd=here)
    q = _user("query", QUESTION, "--brain", str(brain), cwd=here)
    _user("serve", "stop", "--brain", str(brain), cwd=here)
    held = got.returncode == 0 and q.returncode == 0 and not mark.exists()
    return held, f"serve --detach exit {got.returncode}, query exit {q.returncode}, " + (
        "planted replay.py ran" if mark.exists() else "nothing planted ran"
    )


def planted_mcp(root: Path) -> tuple[bool, str]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    _, brain = example_brain(root)
    here, mark = _plant(root)
    env = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}
    params = StdioServerParameters(
        command=str(SCRIPT), args=["mcp", "--brain", str(brain)], env=env, cwd=str(here)
    )

    async def go() -> bool:
        with (root / "mcp.err").open("w") as err:
            async with stdio_client(params, errlog=err) as (r, w), ClientSession(r, w) as s:
                await asyncio.wait_for(s.initialize(), 120)
                got = await s.call_tool("memory_search", {"query": QUESTION, "limit": 2})
                return not got.is_error and bool((got.structured_content or {}).get("results"))

    try:
        answered = asyncio.run(go())
    finally:
        run("serve", "stop", "--brain", str(brain))
    held = answered and not mark.exists()
    return held, f"memory_search answered: {answered}; planted ran: {mark.exists()}"


def stop_wedged(root: Path) -> tuple[bool, str]:
    """A daemon that answers nothing (SIGSTOP) and holds the lock: stop must end it,
    say so, and leave the lock free."""
    _, brain = example_brain(root)
    proc = _serve(brain)
    os.kill(proc.pid, signal.SIGSTOP)
    got = run("serve", "stop", "--brain", str(brain), "--grace", "5")
    exited = proc.poll() is not None or _wait(lambda: proc.poll() is not None, 1)
    _end(proc)
    again = _serve(brain)
    stopped = run("serve", "stop", "--brain", str(brain))
    _end(again)
    held = got.returncode == 0 and exited and "SIGKILL" in got.stdout and stopped.returncode == 0
    return held, (got.stdout.strip() or got.stderr.strip())[:160]


def idle_flood(root: Path) -> tuple[bool, str]:
    """MAX_CLIENTS idle connections, then the CLI; then 10 idle connections at a 1 s
    idle timeout are closed by the daemon."""
    _, brain = example_brain(root)
    proc = _serve(brain)
    held_open = []
    try:
        for _ in range(MAX_CLIENTS * 2):
            sock = None
            while sock is None:  # a full backlog refuses at once: wait for each accept
                sock = connect(brain, timeout=30.0)
            held_open.append(sock)
        q = run("query", QUESTION, "--brain", str(brain), "--json")
        ok = q.returncode == 0 and msgspec.json.decode(q.stdout)["results"]
    finally:
        for s in held_open:
            s.close()
        run("serve", "stop", "--brain", str(brain))
        _end(proc)
    proc = _serve(brain, "--idle-timeout", "1")
    try:
        idle = [connect(brain, timeout=30.0) for _ in range(10)]
        closed = 0
        for s in idle:
            if s is not None:
                s.settimeout(30)
                closed += s.recv(1) == b""
                s.close()
    finally:
        run("serve", "stop", "--brain", str(brain))
        _end(proc)
    held = bool(ok) and closed == 10
    return (
        held,
        f"{len(held_open)} idle connections, then query exit {q.returncode}; "
        f"{closed}/10 idle connections closed by the daemon",
    )


def cli_escapes(root: Path) -> tuple[bool, str]:
    """The ``cli`` method asked to serve, stop or write another brain."""
    ws, brain = example_brain(root)
    other = root / "other"
    proc = _serve(brain)
    refused = 0
    tries = [
        ["serve", "--brain", str(other), "--workspace", str(ws)],
        ["serve", "stop", "--brain", str(brain)],
        ["init", "--brain", str(other), "--workspace", str(ws)],
        ["mcp", "--brain", str(brain)],
        ["query", QUESTION],
        ["query", QUESTION, "--brain", str(other)],
    ]
    try:
        for argv in tries:
            sock = connect(brain, timeout=30.0)
            assert sock is not None
            with sock:
                try:
                    call(sock, "cli", {"argv": argv, "protocol": PROTOCOL})
                except RpcError:
                    refused += 1
        alive = (_hello(brain) or {}).get("pid") == proc.pid
    finally:
        run("serve", "stop", "--brain", str(brain))
        _end(proc)
    held = refused == len(tries) and alive and not other.exists()
    return (
        held,
        f"{refused}/{len(tries)} refused; daemon alive: {alive}; other brain made: "
        f"{other.exists()}",
    )


def deep_path(root: Path) -> tuple[bool, str]:
    deep = root / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    _, brain = example_brain(deep)
    proc = _serve(brain)
    try:
        q = run("query", QUESTION, "--brain", str(brain), "--json")
    finally:
        run("serve", "stop", "--brain", str(brain))
        _end(proc)
    n = len(os.fsencode(brain / "run" / "ocb.sock"))
    return q.returncode == 0, f"socket path {n} bytes; query through the daemon exit {q.returncode}"


def deep_json(root: Path) -> tuple[bool, str]:
    _, brain = example_brain(root)
    proc = _serve(brain)
    try:
        nest = b"[" * 100_000 + b"]" * 100_000
        sock = connect(brain, timeout=30.0)
        assert sock is not None
        with sock:
            sock.sendall(b'{"jsonrpc":"2.0","id":1,"method":"query","params":{"text":' + nest
                         + b"}}\n")  # fmt: skip
            line = sock.makefile("rb").readline()
        answer = msgspec.json.decode(line) if line else {}
        alive = _hello(brain) is not None
    finally:
        run("serve", "stop", "--brain", str(brain))
        _end(proc)
    err = answer.get("error", {}) if isinstance(answer, dict) else {}
    return bool(err) and alive, f"answer: {err.get('message', 'none')!r}; alive: {alive}"


def start_race(root: Path) -> tuple[bool, str]:
    """Eight ``ocb serve --detach`` at once: one daemon, every start names it."""
    _, brain = example_brain(root)
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda _: run("serve", "--detach", "--brain", str(brain)), range(8)))
    pid = (_hello(brain) or {}).get("pid")
    named = sum(g.returncode == 0 and f"(pid {pid}," in g.stdout for g in got)
    started = sum(g.stdout.startswith("serving") for g in got)
    log = (brain / "run" / "daemon.log").read_text()
    once = log.count(f"serving {brain} (pid {pid}") == 1
    run("serve", "stop", "--brain", str(brain))
    held = named == 8 and started == 1 and once
    return (
        held,
        f"{named}/8 starts name daemon pid {pid}, {started} started it; log line once: {once}",
    )


def no_daemon_beside(root: Path) -> tuple[bool, str]:
    _, brain = example_brain(root)
    proc = _serve(brain)
    try:
        got = run("--no-daemon", "learn", "--brain", str(brain), "--trace", "t1", "--outcome", "1")
    finally:
        run("serve", "stop", "--brain", str(brain))
        _end(proc)
    first = got.stderr.splitlines()[0] if got.stderr else ""
    return f"served by its daemon (pid {proc.pid})" in first, first[:160]


def other_users(root: Path) -> tuple[bool, str]:
    """Every file of a new brain (after a daemon, a query and SQL) as ``nobody``: as
    root, by reading; otherwise by its mode."""
    shared = root / "shared"
    shared.mkdir()
    os.chmod(root, 0o755)
    os.chmod(shared, 0o755)
    _, brain = example_brain(shared)
    proc = _serve(brain)
    run("query", QUESTION, "--brain", str(brain))
    run("sql", "SELECT count(*) FROM events", "--brain", str(brain))
    run("serve", "stop", "--brain", str(brain))
    _end(proc)
    files = [p for p in brain.rglob("*") if p.is_file()]
    if os.getuid() == 0:
        probe = 'n=0; for f in "$@"; do head -c1 "$f" >/dev/null 2>&1 && n=$((n+1)); done; echo $n'
        got = subprocess.run(
            ["/bin/sh", "-c", probe, "sh", *map(str, files)], user=65534, group=65534,
            extra_groups=[], capture_output=True, text=True, cwd="/",
        )  # fmt: skip
        read = int(got.stdout.strip() or -1)
        return read == 0, f"nobody read {read} of {len(files)} files"
    loose = [p for p in [brain, *brain.rglob("*")] if p.stat().st_mode & 0o077]
    return not loose, f"{len(loose)} of {len(files)} paths open to others"


TRIALS = [
    Trial(
        "planted module, serve --detach",
        "replay.py and ocb/ in the caller's directory",
        planted_serve,
    ),
    Trial(
        "planted module, ocb mcp",
        "an MCP client starts ocb mcp in a planted directory",
        planted_mcp,
    ),
    Trial(
        "stop a wedged daemon",
        "SIGSTOP'd daemon holding the lock; ocb serve stop --grace 5",
        stop_wedged,
    ),
    Trial("idle connection flood", f"{MAX_CLIENTS * 2} idle connections, then the CLI", idle_flood),
    Trial("cli method escapes", "serve/stop/init/mcp/other brain via the cli method", cli_escapes),
    Trial("deep brain path", "socket path over 107 bytes", deep_path),
    Trial("JSON nested 100,000 deep", "one request frame", deep_json),
    Trial("start race", "8 ocb serve --detach at once", start_race),
    Trial("--no-daemon beside a daemon", "a write run in-process", no_daemon_beside),
    Trial("another user", "nobody reads a new brain", other_users),
]
