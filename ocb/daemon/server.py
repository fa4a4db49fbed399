"""The daemon's server: JSON-RPC 2.0 over a Unix socket or a pair of streams, reads on a
pool of threads beside the one writer thread.

Every request is answered, whatever its bytes: invalid JSON, a wrong shape, an unknown
method, bad params, a failing command or a timeout each get an error object, and a line
over ``MAX_FRAME`` gets one before its connection is closed. A request runs on the
reader pool (``read``: under the gate, shared), on the writer thread (``write``, or
``exclusive``: under the gate for its whole run), or inline (``control``: hello, status,
shutdown). A slow or vanished client only ever holds its own connection's thread.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError as FutureTimeout
from typing import Any, BinaryIO

import msgspec

from ocb import __version__
from ocb.daemon.live import LiveBrain
from ocb.daemon.protocol import (
    CONFLICT,
    INTERNAL,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PROTOCOL,
    TIMEOUT,
    USER_ERROR,
    Request,
    RpcError,
    read_frame,
)
from ocb.daemon.writer import Writer
from ocb_events.errors import OcbError

__all__ = ["Method", "Server", "rpc_error"]

Log = Callable[[str], None]
MAX_CLIENTS = 128
SEND_TIMEOUT = 30.0


class Method:
    """One method of the protocol: how it runs (``read``, ``write``, ``exclusive`` or
    ``control``; or a function of the params that says so) and what it does."""

    __slots__ = ("fn", "kind")

    def __init__(self, kind: str | Callable[[dict[str, Any]], str], fn: Callable[..., Any]):
        self.kind = kind
        self.fn = fn

    def kind_of(self, params: dict[str, Any]) -> str:
        return self.kind(params) if callable(self.kind) else self.kind


def _error(rid: object, code: int, message: str, hint: str = "", kind: str = "") -> bytes:
    err: dict[str, Any] = {"code": code, "message": message}
    if hint or kind:
        err["data"] = {"hint": hint, "kind": kind}
    return msgspec.json.encode({"jsonrpc": "2.0", "id": rid, "error": err}) + b"\n"


def rpc_error(method: str, exc: Exception) -> RpcError:
    """The error answer to a request of ``method`` that raised ``exc``: a user error
    (``OcbError``) with its hint, bad params, or an internal error (a bug)."""
    if isinstance(exc, RpcError):
        return exc
    if isinstance(exc, OcbError):
        return RpcError(USER_ERROR, exc.message, exc.hint, type(exc).__name__)
    if isinstance(exc, msgspec.ValidationError | TypeError | ValueError):
        return RpcError(INVALID_PARAMS, f"bad params for {method}: {exc}")
    return RpcError(INTERNAL, f"internal error: {type(exc).__name__}: {exc}")


class Server:
    """Serves one live brain.

    Args:
        brain: the brain, opened as writer.
        methods: the protocol's methods by name (``hello``, ``status`` and
            ``shutdown`` are the server's own and are added).
        timeout: seconds a request may take before it is answered with TIMEOUT.
        readers: threads that run reads.
        log: receives a line per notable event (start, errors, stop).
        info: more fields for ``status`` (the watcher's).
    """

    def __init__(
        self,
        brain: LiveBrain,
        methods: Mapping[str, Method],
        *,
        timeout: float = 60.0,
        readers: int = 8,
        log: Log = lambda _m: None,
        info: Callable[[], dict[str, Any]] = dict,
    ) -> None:
        self.brain = brain
        self.timeout = timeout
        self.log = log
        self._info = info
        self.methods: dict[str, Method] = {
            **methods,
            "hello": Method("control", self._hello),
            "status": Method("control", self.status),
            "shutdown": Method("control", self._shutdown),
        }
        self.writer = Writer(brain.log.group, brain.gate, self._lost)
        self._readers = ThreadPoolExecutor(readers, thread_name_prefix="ocb-read")
        self._stopping = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)  # signal.set_wakeup_fd needs it
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._busy = 0
        self.started = time.monotonic()
        self.requests = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the writer thread; from now on only it records."""
        self.writer.start()
        self.brain.writer_thread = self.writer.ident

    def stop(self) -> None:
        """Ask the server to stop (safe from a signal handler or another thread)."""
        self._stopping.set()
        with contextlib.suppress(OSError):  # full: woken already; closed: stopped
            os.write(self._wake_w, b"x")

    @property
    def wake_fd(self) -> int:
        """A descriptor whose write wakes the serving loop: hand it to
        ``signal.set_wakeup_fd``, as a signal may land on any thread while the main
        thread waits in ``select``, where no Python handler runs until it wakes."""
        return self._wake_w

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def close(self) -> None:
        """After the serving loop ended: let in-flight requests finish, drop the
        connections, run every queued write, and close the brain (snapshots)."""
        deadline = time.monotonic() + self.timeout
        while self._busy and time.monotonic() < deadline:
            time.sleep(0.01)
        with self._lock:
            for conn in self._conns:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self.writer.stop()
        self._readers.shutdown(wait=True)
        self.brain.writer_thread = None
        self.brain.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _lost(self, exc: BaseException) -> None:
        self.log(f"a group flush failed, its writes were not acknowledged: {exc}")
        self.brain.drop_unflushed()

    # ------------------------------------------------------------------ control methods

    def _hello(self, _params: dict[str, Any]) -> dict[str, Any]:
        log = self.brain.log
        first = log.chain_of(1) if log.last_seq else None
        return {
            "protocol": PROTOCOL,
            "version": __version__,
            "brain": str(self.brain.path.resolve()),
            "brain_id": first.hex() if first else "",
            "seq": log.last_seq,
            "pid": os.getpid(),
        }

    def status(self, _params: dict[str, Any] | None = None) -> dict[str, Any]:
        """What ``ocb serve status`` prints."""
        with self._lock:
            clients = len(self._conns)
        return {
            "pid": os.getpid(),
            "brain": str(self.brain.path.resolve()),
            "uptime_s": round(time.monotonic() - self.started, 1),
            "seq": self.brain.log.last_seq,
            "clients": clients,
            "requests": self.requests,
            "writes": self.writer.jobs,
            "groups": self.writer.groups,
            "rss_bytes": _rss(),
            **self._info(),
        }

    def _shutdown(self, _params: dict[str, Any]) -> dict[str, Any]:
        self.log("stop requested by a client")
        self.stop()
        return {"stopping": True, "pid": os.getpid()}

    # ------------------------------------------------------------------ one request

    def handle(self, line: bytes) -> bytes:
        """The answer frame to one request frame (never raises)."""
        try:
            req = msgspec.json.decode(line, type=Request)
        except msgspec.ValidationError as exc:
            return _error(None, INVALID_REQUEST, f"not a JSON-RPC request: {exc}")
        except (msgspec.DecodeError, ValueError) as exc:  # bad UTF-8 is a ValueError
            return _error(None, PARSE_ERROR, f"invalid JSON: {exc}")
        if req.jsonrpc != "2.0":
            return _error(req.id, INVALID_REQUEST, 'jsonrpc must be "2.0"')
        if req.id is None:
            return _error(None, INVALID_REQUEST, "every request needs an id")
        with self._lock:
            self.requests += 1
        try:
            result = self._call(req)
            return msgspec.json.encode({"jsonrpc": "2.0", "id": req.id, "result": result}) + b"\n"
        except Exception as exc:
            err = rpc_error(req.method, exc)
            if err.code == INTERNAL:
                self.log(f"internal error in {req.method}:\n{traceback.format_exc()}")
            return _error(req.id, err.code, err.message, err.hint, err.kind)

    def _call(self, req: Request) -> Any:
        method = self.methods.get(req.method)
        if method is None:
            raise RpcError(
                METHOD_NOT_FOUND,
                f"unknown method {req.method[:80]!r}",
                "methods: " + ", ".join(sorted(self.methods)),
            )
        kind = method.kind_of(req.params)
        if kind == "control":
            return method.fn(req.params)
        if self.stopping:
            raise RpcError(CONFLICT, "the daemon is stopping", "retry once it has stopped")
        fut: Future[Any]
        if kind == "read":
            fut = self._readers.submit(self._read, method.fn, req.params)
        else:
            fut = self.writer.submit(lambda: method.fn(req.params), exclusive=kind == "exclusive")
        try:
            return fut.result(self.timeout)
        except FutureTimeout:
            started = not fut.cancel()
            raise RpcError(
                TIMEOUT,
                f"no answer within {self.timeout:g} s"
                + ("; it may still complete" if started else "; it was dropped, nothing recorded"),
                "retry with a request id (learn), or check ocb events before retrying",
            ) from None

    def _read(self, fn: Callable[[dict[str, Any]], Any], params: dict[str, Any]) -> Any:
        with self.brain.gate.read():
            return fn(params)

    # ------------------------------------------------------------------ connections

    def serve_stream(self, rfile: BinaryIO, send: Callable[[bytes], None]) -> None:
        """Answer the requests of one client until it closes, or sends a line over the
        limit, or the server stops."""
        while not self.stopping:
            try:
                line = read_frame(rfile)
            except RpcError as exc:
                send(_error(None, exc.code, exc.message, exc.hint))
                return
            except (OSError, ValueError):
                return
            if line is None:
                return
            if not line.strip():
                continue
            with self._lock:
                self._busy += 1
            try:
                send(self.handle(line))
            finally:
                with self._lock:
                    self._busy -= 1

    def _connection(self, conn: socket.socket) -> None:
        rfile = conn.makefile("rb")

        def send(data: bytes) -> None:
            conn.settimeout(SEND_TIMEOUT)
            conn.sendall(data)
            conn.settimeout(None)

        try:
            self.serve_stream(rfile, send)
        except OSError:
            pass  # the client went away
        finally:
            with self._lock:
                self._conns.discard(conn)
            rfile.close()
            conn.close()

    def serve_unix(self, listener: socket.socket) -> None:
        """Accept clients on ``listener`` until ``stop``."""
        while not self.stopping:
            ready, _, _ = select.select([listener.fileno(), self._wake_r], [], [])
            if self._wake_r in ready or self.stopping:
                break
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with self._lock:
                full = len(self._conns) >= MAX_CLIENTS
                if not full:
                    self._conns.add(conn)
            if full:
                conn.sendall(_error(None, CONFLICT, f"over {MAX_CLIENTS} clients", "retry later"))
                conn.close()
                continue
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()


def _rss() -> int:
    """The resident memory of this process in bytes (0 where /proc is missing)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
