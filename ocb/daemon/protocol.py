"""The daemon's wire protocol: JSON-RPC 2.0, one JSON object per line, over the Unix
socket ``<brain>/run/ocb.sock`` (or stdin/stdout for a host that spawns the daemon).

A request is ``{"jsonrpc": "2.0", "id": 1, "method": "query", "params": {...}}`` on one
line; its answer is ``{"jsonrpc": "2.0", "id": 1, "result": ...}`` or ``{"jsonrpc":
"2.0", "id": 1, "error": {"code": -32001, "message": "...", "data": {"hint": "...",
"kind": "InputError"}}}``. Params are always an object (named). A request must carry
an ``id``: a notification is answered with an error, since every call to a brain has an
outcome its caller should see. A line longer than ``MAX_FRAME`` bytes is refused and the
connection closed. Call ``hello`` first and refuse a daemon whose ``protocol`` differs.

NOTE: this module is on the client path of every ``ocb`` command: the standard library
and msgspec only.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

__all__ = [
    "CONFLICT",
    "INTERNAL",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_FRAME",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "PROTOCOL",
    "TIMEOUT",
    "TOO_LARGE",
    "USER_ERROR",
    "Request",
    "RpcError",
    "call",
    "connect",
    "read_frame",
    "run_dir",
    "socket_address",
    "socket_path",
]

PROTOCOL = 1
"""The protocol version ``hello`` reports; a client refuses any other."""
MAX_FRAME = 16 * 1024 * 1024
"""The longest request line, in bytes (16 MiB)."""
MAX_ADDRESS = 107
"""The longest Unix socket path the kernel takes (``sun_path`` is 108 bytes on Linux)."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL = -32603
USER_ERROR = -32001
"""An ``OcbError``: the message and its hint (``data.hint``), exit code 1 in the CLI."""
TIMEOUT = -32002
TOO_LARGE = -32003
CONFLICT = -32004
"""The daemon is shutting down, or is of another brain or protocol."""


class Request(msgspec.Struct, kw_only=True):
    """One JSON-RPC request as the daemon reads it (validated by msgspec)."""

    jsonrpc: str
    method: str
    id: int | str | None = None
    params: dict[str, Any] = msgspec.field(default_factory=dict)


class RpcError(Exception):
    """An error answer of the daemon: its code, message and hint."""

    def __init__(self, code: int, message: str, hint: str = "", kind: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.kind = kind


def run_dir(brain: str | Path) -> Path:
    """Where a brain's daemon keeps its socket and log."""
    return Path(brain) / "run"


def socket_path(brain: str | Path) -> Path:
    """The Unix socket of a brain's daemon."""
    return run_dir(brain) / "ocb.sock"


@contextmanager
def socket_address(path: Path) -> Iterator[str]:
    """The address to bind or connect ``path`` by: the path itself, or, when it is
    longer than the kernel takes (a brain deep in a tree), the same file reached through
    a descriptor of its directory (``/proc/self/fd/N/ocb.sock``), so the socket stays in
    the brain's private run directory whatever the length of its path.

    Raises:
        OSError: the path is too long and this system has no ``/proc/self/fd``.
    """
    name = os.fsencode(path)
    if len(name) <= MAX_ADDRESS:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        short = f"/proc/self/fd/{fd}/{path.name}"
        if not os.path.isdir(f"/proc/self/fd/{fd}"):
            raise OSError(
                f"the socket path {path} is over {MAX_ADDRESS} bytes and this system has "
                "no /proc/self/fd to reach it by: use a brain with a shorter path"
            )
        yield short
    finally:
        os.close(fd)


def connect(brain: str | Path, *, timeout: float | None = None) -> socket.socket | None:
    """A connection to the daemon serving ``brain`` (None: no daemon listens). A full
    backlog (many clients connecting at once) is waited out, up to ``timeout``."""
    path = socket_path(brain)
    if not path.is_socket():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        with socket_address(path) as address:
            while True:
                try:
                    sock.connect(address)
                    return sock
                except BlockingIOError:  # a Unix socket with a timeout refuses at once
                    if deadline is not None and time.monotonic() >= deadline:
                        raise
                    time.sleep(0.01)
    except OSError:
        sock.close()
        return None


def read_frame(stream: Any, limit: int = MAX_FRAME) -> bytes | None:
    """One line from a binary stream (``readline``), without its newline; None at the
    end of the stream.

    Raises:
        RpcError: the line is longer than ``limit`` (TOO_LARGE).
    """
    line: bytes = stream.readline(limit + 1)
    if not line:
        return None
    if len(line) > limit and not line.endswith(b"\n"):
        raise RpcError(
            TOO_LARGE,
            f"request over {limit // (1024 * 1024)} MiB",
            "send smaller requests (the limit is per line)",
        )
    return line.rstrip(b"\r\n")


_ids = iter(range(1, 1 << 62))


def call(
    sock: socket.socket, method: str, params: dict[str, Any] | None = None, *, reader: Any = None
) -> Any:
    """Send one request on ``sock`` and return its result.

    Args:
        reader: a binary file over ``sock`` (``sock.makefile("rb")``) to read answers
            from, kept by callers that send several requests.

    Raises:
        RpcError: the daemon answered with an error, or closed the connection.
    """
    rid = next(_ids)
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}
    sock.sendall(msgspec.json.encode(body) + b"\n")
    own = reader is None
    stream = sock.makefile("rb") if own else reader
    try:
        line = read_frame(stream, 1 << 40)
    finally:
        if own:
            stream.close()
    if line is None:
        raise RpcError(INTERNAL, "the daemon closed the connection", "see <brain>/run/daemon.log")
    answer = msgspec.json.decode(line)
    err = answer.get("error")
    if err is not None:
        data = err.get("data") or {}
        raise RpcError(err["code"], err["message"], data.get("hint", ""), data.get("kind", ""))
    return answer.get("result")
