"""``ocb ui`` as a user runs it, for the window's tests, its screenshots and its
benchmark: the real command in its own process on a real socket (``Window``), and a
real headless Chromium installed by ``tools/browser/setup.sh`` (``chromium``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from tests.installs import install

ROOT = Path(__file__).resolve().parents[3]
SETUP = ROOT / "tools" / "browser" / "setup.sh"
LAUNCH_ARGS = ["--no-sandbox", "--headless=new", "--disable-gpu", "--no-first-run",
               "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--disable-dev-shm-usage"]  # fmt: skip
"""Chromium's flags here: no sandbox (root), no connection of its own to the network."""


def chromium() -> str:
    """The path of the headless Chromium, installed on first use into the cache (one
    process installs at a time); fails naming the command to run when it cannot."""
    root, done = install("browser", SETUP)
    path = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0 and Path(path).is_file(), (
        f"the browser is not installed; run: bash {SETUP} {root}\n{done.stdout}\n{done.stderr}"
    )
    return path


@dataclass
class Window:
    """A running ``ocb ui``: its URL (with the token), token, port and process."""

    url: str
    token: str
    port: int
    proc: subprocess.Popen[str]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str, *, token: bool = True, headers: dict[str, str] | None = None,
            timeout: float = 60.0) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
        """GET ``path`` (the token in the X-OCB-Token header unless ``token`` is
        False): status, headers (lower-case names) and body."""
        h = {"X-OCB-Token": self.token} if token else {}
        return request(self.base + path, headers=h | (headers or {}), timeout=timeout)

    def api(self, path: str, timeout: float = 60.0) -> Any:
        """GET an API path that must answer 200; its JSON."""
        status, _, body = self.get(path, timeout=timeout)
        assert status == 200, (path, status, body[:300])
        return msgspec.json.decode(body)

    def post(self, path: str, body: Any, headers: dict[str, str] | None = None
             ) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
        """POST ``body`` as JSON with the token header (``headers`` override)."""
        h = {"X-OCB-Token": self.token, "Content-Type": "application/json"}
        return request(
            self.base + path, data=msgspec.json.encode(body), headers=h | (headers or {})
        )


def request(url: str, *, data: bytes | None = None, headers: dict[str, str] | None = None,
            timeout: float = 60.0) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
    """One HTTP request: status, headers (lower-case names), body (errors included)."""
    req = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as got:
            return got.status, {k.lower(): v for k, v in got.headers.items()}, got.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def ocb_argv(*args: str) -> list[str]:
    """``ocb <args>`` run from this checkout with this interpreter."""
    return [sys.executable, "-m", "ocb.entry", *args]


def ocb_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if "PYTHONPATH" in env else "")
    env.pop("OCB_NO_DAEMON", None)
    env.pop("OCB_BRAIN", None)
    return env


@contextmanager
def window(brain: Path, *, writes: bool = False, port: int = 0) -> Iterator[Window]:
    """``ocb ui --brain brain --no-open`` running until the block ends (then stopped
    with Ctrl-C, as a user does, and its exit checked)."""
    argv = ocb_argv("ui", "--brain", str(brain), "--no-open", "--port", str(port))
    if writes:
        argv.append("--allow-writes")
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ocb_env()
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first.startswith("http://127.0.0.1:"), (first, proc.stderr and proc.stderr.read())
        port_s = first.split(":")[2].split("/")[0]
        token = first.split("token=", 1)[1]
        yield Window(first, token, int(port_s), proc)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise AssertionError("ocb ui did not stop on Ctrl-C") from None
        err = proc.stderr.read() if proc.stderr else ""
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        assert proc.returncode in (0, -signal.SIGINT), (proc.returncode, err)
        assert "Traceback" not in err, err
