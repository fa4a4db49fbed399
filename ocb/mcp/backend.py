"""Where the MCP server's calls go: one ``call(method, params)`` answered by the daemon
serving the brain (over its socket, starting it when none runs) or by the daemon's
methods run in this process (``--no-daemon``). Both raise ``RpcError`` as the daemon
answers it, so the tools see one kind of failure whichever way they run."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from ocb.daemon.live import LiveBrain
from ocb.daemon.methods import methods
from ocb.daemon.protocol import INTERNAL, PROTOCOL, RpcError, call, connect
from ocb.daemon.run import spawn
from ocb.daemon.server import Method, rpc_error
from ocb_events.durable import private_dir
from ocb_events.errors import BrainNotFound, OcbError

__all__ = ["Backend", "DaemonBackend", "LocalBackend", "attach", "in_process"]

CALL_TIMEOUT_S = 300.0
"""How long a call may wait on the daemon's socket (the daemon times out first: 60 s)."""


class Backend(Protocol):
    """One protocol call: the method's result, or ``RpcError``."""

    def call(self, method: str, params: dict[str, Any]) -> Any: ...


class DaemonBackend:
    """Calls the daemon serving ``brain``, one connection per call (calls may run on
    several threads at once; the daemon orders the writes).

    Args:
        brain: the brain directory.
        restart: starts a daemon again when none answers (None: report it).
    """

    def __init__(self, brain: Path, restart: Callable[[], object] | None = None) -> None:
        self.brain = brain
        self._restart = restart

    def call(self, method: str, params: dict[str, Any]) -> Any:
        sock = connect(self.brain, timeout=CALL_TIMEOUT_S)
        if sock is None and self._restart is not None:
            self._restart()
            sock = connect(self.brain, timeout=CALL_TIMEOUT_S)
        if sock is None:
            raise RpcError(
                INTERNAL,
                f"no daemon serves {self.brain}",
                f"start one: ocb serve --brain {self.brain} --detach",
            )
        try:
            with sock:
                return call(sock, method, params)
        except OSError as exc:
            raise RpcError(
                INTERNAL,
                f"the daemon of {self.brain} did not answer: {exc}",
                f"see {self.brain / 'run' / 'daemon.log'}",
            ) from None


class LocalBackend:
    """Runs the daemon's methods in this process, one call at a time (the brain has
    no writer thread here, so calls are serialised by a lock)."""

    def __init__(self, methods: Mapping[str, Method]) -> None:
        self._methods = methods
        self._lock = threading.Lock()

    def call(self, method: str, params: dict[str, Any]) -> Any:
        found = self._methods.get(method)
        if found is None:
            raise RpcError(INTERNAL, f"unknown method {method!r}", "report this: a tool is stale")
        with self._lock:
            try:
                return found.fn(params)
            except Exception as exc:
                raise rpc_error(method, exc) from exc


def attach(brain: Path, workspace: Path | None = None) -> DaemonBackend:
    """A backend on the daemon serving ``brain``, started first (as ``ocb serve
    --detach`` does) when none answers; it is started again if it stops later.

    Raises:
        BrainNotFound: there is no brain at ``brain`` and no workspace to build it from.
        OcbError: no daemon answers and one could not be started (the last line of
            its log), or the one that answers speaks another protocol.
        RpcError: the daemon refused ``hello``.
    """
    if not brain.is_dir():
        if workspace is None:
            raise BrainNotFound(brain)
        private_dir(brain)  # the daemon builds it from the workspace
    argv = ["serve", "--brain", str(brain)]
    if workspace is not None:
        argv += ["--workspace", str(workspace)]

    def start() -> None:
        try:
            spawn(argv, brain)
        except OcbError:
            # another client may have started one first: use it
            sock = connect(brain, timeout=5.0)
            if sock is None:
                raise
            sock.close()

    sock = connect(brain, timeout=30.0)
    if sock is None:
        start()
    else:
        with sock:
            _check(brain, call(sock, "hello"))
    return DaemonBackend(brain, restart=start)


def _check(brain: Path, hello: dict[str, Any]) -> None:
    if hello.get("protocol") != PROTOCOL:
        raise OcbError(
            f"the daemon of {brain} speaks protocol {hello.get('protocol')}, this ocb {PROTOCOL}",
            f"restart it with this ocb: ocb serve stop --brain {brain}, then ocb mcp again",
        )


@contextmanager
def in_process(brain: Path) -> Iterator[LocalBackend]:
    """A backend running the daemon's methods (``ocb.daemon.methods``) over ``brain``
    opened in this process as its writer (no daemon), closed (flushed, snapshots
    written) on exit.

    Raises:
        BrainLocked: another process (a daemon) writes the brain.
        BrainError: there is no brain at ``brain``.
    """
    with LiveBrain(brain) as live:
        yield LocalBackend(methods(live))
