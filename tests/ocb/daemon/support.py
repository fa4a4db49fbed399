"""Real daemons for tests: a subprocess running ``ocb serve`` on a brain, waited for
until it answers ``hello`` (a deadline, no fixed sleep), and stopped at the end."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ocb.daemon.protocol import RpcError, call, connect
from tests.waiting import DEADLINE, wait_for

__all__ = ["DEADLINE", "daemon", "env", "hello", "ocb", "raw", "rpc", "start", "stop", "wait_for"]

ROOT = Path(__file__).resolve().parents[3]


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    e.pop("OCB_NO_DAEMON", None)
    e.pop("OCB_BRAIN", None)
    return e


def hello(brain: Path) -> dict[str, Any] | None:
    sock = connect(brain, timeout=10.0)
    if sock is None:
        return None
    try:
        with sock:
            got: dict[str, Any] = call(sock, "hello")
            return got
    except (RpcError, OSError):
        return None


def rpc(brain: Path, method: str, **params: Any) -> Any:
    sock = connect(brain, timeout=60.0)
    assert sock is not None, "no daemon"
    with sock:
        return call(sock, method, params)


def start(brain: Path, *args: str, workspace: Path | None = None) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "ocb.entry", "serve", "--brain", str(brain), *args]
    if workspace is not None:
        argv += ["--workspace", str(workspace)]
    # the daemon's own log is BRAIN/run/daemon.log: a pipe nobody reads could fill
    proc = subprocess.Popen(argv, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def up() -> bool:
        if proc.poll() is not None:
            log = brain / "run" / "daemon.log"
            text = log.read_text() if log.exists() else ""
            raise AssertionError(f"daemon exited {proc.returncode}: {text[-2000:]}")
        h = hello(brain)
        return h is not None and h["pid"] == proc.pid

    try:
        wait_for(up, "the daemon to answer")
    except BaseException:  # a daemon that never answers is not left running
        proc.kill()
        proc.wait()
        raise
    return proc


def stop(proc: subprocess.Popen[bytes]) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    return proc.wait(DEADLINE)


@contextmanager
def daemon(
    brain: Path, *args: str, workspace: Path | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    proc = start(brain, *args, workspace=workspace)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def ocb(
    *argv: str, cwd: Path | None = None, extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``ocb <argv>`` as a user runs it (the console entry point), in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "ocb.entry", *argv],
        env={**env(), **(extra or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )


def raw(brain: Path) -> socket.socket:
    sock = connect(brain, timeout=60.0)
    assert sock is not None
    return sock
