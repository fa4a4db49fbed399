"""Run the window: a socket on 127.0.0.1 (the port asked, or a free one), its URL with
the token printed first, the app served by uvicorn until interrupted."""

from __future__ import annotations

import asyncio
import socket
import webbrowser
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import uvicorn

from ocb.daemon.methods import App
from ocb.ui.app import build
from ocb.ui.guard import Guard, new_token
from ocb.ui.source import open_source
from ocb_events.errors import InputError

__all__ = ["listen", "serve"]

HOST = "127.0.0.1"
SETTLE_S = 5.0
"""How long a stopping window waits for the calls under way (a check of a long log
takes longer: the window then stops without their answers)."""


def listen(port: int) -> socket.socket:
    """A listening socket on ``HOST`` at ``port`` (0: a free one).

    Raises:
        InputError: the port is taken or cannot be used.
    """
    if not 0 <= port <= 65535:
        raise InputError(f"port {port} is not a port", "pass --port 0 for a free one")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise InputError(
            f"cannot listen on {HOST}:{port} ({exc.strerror})", "pass --port 0 for a free one"
        ) from None
    sock.listen(128)
    return sock


def serve(
    brain: Path,
    *,
    port: int = 0,
    open_browser: bool = True,
    writes: bool = False,
    echo: Callable[[str], None] = print,
    app: App,
    abandon: Callable[[], None] | None = None,
) -> None:
    """Serve the window onto ``brain`` until interrupted; its URL is the first line
    ``echo`` gets; ``app`` is the ``ocb`` command line the pages' commands run in.
    Stopped while a call is still under way after ``SETTLE_S``, it calls ``abandon``
    (which ends the process: the brain cannot be closed under a running call).

    Raises:
        InputError: the port cannot be used.
        BrainNotFound, BrainLocked: as ``ocb.ui.source.open_source``.
    """
    sock = listen(port)
    try:
        with open_source(brain, writes=writes, app=app) as source:
            bound = int(sock.getsockname()[1])
            token = new_token()
            stop = asyncio.Event()
            window = build(source, Guard(token, bound, writes=writes), stop=stop)
            url = f"http://{HOST}:{bound}/ask?token={token}"
            echo(url)
            mode = "its daemon" if source.mode == "daemon" else "this process"
            echo(f"serving {brain} through {mode}, "
                 f"{'writes on' if writes else 'read-only'}; Ctrl-C stops")  # fmt: skip
            config = uvicorn.Config(
                window, log_level="warning", access_log=False, lifespan="off",
                timeout_graceful_shutdown=2,
            )  # fmt: skip
            server = _Server(config, stop)
            if open_browser:
                webbrowser.open(url)
            try:
                server.run(sockets=[sock])  # (uvicorn raises the Ctrl-C it stopped for)
            finally:
                if not source.settle(SETTLE_S) and abandon is not None:
                    echo("stopped with a request still running (its answer is dropped)")
                    abandon()
    finally:
        sock.close()


class _Server(uvicorn.Server):
    """uvicorn's server, ending the open streams as soon as it is asked to stop."""

    def __init__(self, config: uvicorn.Config, stop: asyncio.Event) -> None:
        super().__init__(config)
        self._stop = stop

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._stop.set()
        super().handle_exit(sig, frame)
