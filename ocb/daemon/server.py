"""The daemon's server: JSON-RPC 2.0 over a Unix socket or a pair of streams, reads on a
pool of threads beside the one writer thread.

Every request is answered, whatever its bytes: invalid JSON, a wrong shape, an unknown
method, bad params, a failing command or a timeout each get an error object, and a line
over ``MAX_FRAME`` gets one before its connection is closed. A request runs on the
reader pool (``read``: under the gate, shared), on the writer thread (``write``, or
``exclusive``: under the gate for its whole run), inline (``control``: hello, status,
shutdown), or on a pool of its own outside the gate (``history``: SQL over the history,
which takes the gate only while it reads the log, runs its queries in worker processes,
and has them killed when the server stops). A slow or vanished client only ever holds
its own connection's thread.

A connection that sends nothing for ``idle_s`` seconds between requests is closed, and
when ``MAX_CLIENTS`` connections are open a new one takes the place of the one idle the
longest (a connection inside a request is never dropped), so clients that connect and
wait can never lock the daemon's own command line out. Reads run on daemonic threads:
a read that never returns cannot keep a stopping daemon alive.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import socket
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import Future, TimeoutError as FutureTimeout
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
IDLE_S = 300.0
"""Seconds a connection may wait between requests before it is closed."""
STOP_WAIT_S = 10.0
"""Seconds a stopping server waits for reads still running before it goes without them."""
HISTORY_THREADS = 2
"""Queries over the history that run at once (more wait for one of these threads)."""


class Method:
    """One method of the protocol: how it runs (``read``, ``write``, ``exclusive`` or
    ``control``; or a function of the params that says so) and what it does."""

    __slots__ = ("fn", "kind")

    def __init__(self, kind: str | Callable[[dict[str, Any]], str], fn: Callable[..., Any]):
        self.kind = kind
        self.fn = fn

    def kind_of(self, params: dict[str, Any]) -> str:
        return self.kind(params) if callable(self.kind) else self.kind


class _Pool:
    """Daemonic threads that run submitted calls: unlike a ``ThreadPoolExecutor``,
    whose threads the interpreter joins at exit, a call that never returns here cannot
    keep the process from exiting. As there, a thread is started only when none is
    idle (up to ``size``), so a lone client's calls keep to one thread (and one of the
    allocator's arenas)."""

    def __init__(self, size: int, name: str) -> None:
        self._jobs: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None]
        self._jobs = queue.SimpleQueue()
        self._size = size
        self._name = name
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def submit(self, fn: Callable[[], Any]) -> Future[Any]:
        fut: Future[Any] = Future()
        self._jobs.put((fut, fn))
        if not self._idle.acquire(blocking=False):
            with self._lock:
                if len(self._threads) < self._size:
                    t = threading.Thread(
                        target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True
                    )
                    self._threads.append(t)
                    t.start()
        return fut

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            fut, fn = job
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn())
                except BaseException as exc:
                    fut.set_exception(exc)
            self._idle.release()

    def shutdown(self, wait_s: float) -> int:
        """Let the threads finish what was submitted, waiting at most ``wait_s``; how
        many are still busy (left behind, they die with the process)."""
        with self._lock:
            threads = list(self._threads)
            self._size = 0  # no thread starts from now on
        for _ in threads:
            self._jobs.put(None)
        deadline = time.monotonic() + wait_s
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return sum(t.is_alive() for t in threads)


class _Client:
    """One open connection: whether it is inside a request, and since when it is idle."""

    __slots__ = ("busy", "idle_since", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.busy = False
        self.idle_since = time.monotonic()


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
        idle_s: seconds a connection may wait between requests before it is closed.
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
        idle_s: float = IDLE_S,
        readers: int = 8,
        log: Log = lambda _m: None,
        info: Callable[[], dict[str, Any]] = dict,
    ) -> None:
        self.brain = brain
        self.timeout = timeout
        self.idle_s = idle_s
        self.log = log
        self._info = info
        self.methods: dict[str, Method] = {
            **methods,
            "hello": Method("control", self._hello),
            "status": Method("control", self.status),
            "shutdown": Method("control", self._shutdown),
        }
        self.writer = Writer(brain.log.group, brain.gate, self._lost)
        self._readers = _Pool(readers, "ocb-read")
        self._history = _Pool(HISTORY_THREADS, "ocb-history")
        self._stopping = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)  # signal.set_wakeup_fd needs it
        self._lock = threading.Lock()
        self._conns: dict[socket.socket, _Client] = {}
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
        self.brain.interrupt_queries()  # SQL running now ends, and no more starts
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
        left = self._readers.shutdown(STOP_WAIT_S) + self._history.shutdown(STOP_WAIT_S)
        if left:
            self.log(f"stopping without {left} read(s) still running (nothing they do records)")
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
            "rss_bytes": rss_bytes(),
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
        except RecursionError:
            return _error(
                None, PARSE_ERROR, "invalid JSON: nested too deeply", "send flatter params"
            )
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
            fut = self._readers.submit(lambda: self._read(method.fn, req.params))
        elif kind == "history":
            fut = self._history.submit(lambda: method.fn(req.params))
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

    def serve_stream(
        self, rfile: BinaryIO, send: Callable[[bytes], None], client: _Client | None = None
    ) -> None:
        """Answer the requests of one client until it closes, or sends a line over the
        limit, or stays idle too long (``client``'s socket times out), or the server
        stops."""
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
                if client is not None and self._conns.get(client.sock) is not client:
                    return  # made room for another client just as this line came in
                self._busy += 1
                if client is not None:
                    client.busy = True
            try:
                send(self.handle(line))
            finally:
                with self._lock:
                    self._busy -= 1
                    if client is not None:
                        client.busy, client.idle_since = False, time.monotonic()

    def _connection(self, client: _Client) -> None:
        conn = client.sock
        conn.settimeout(self.idle_s)  # a read that waits longer ends the connection
        rfile = conn.makefile("rb")

        def send(data: bytes) -> None:
            conn.settimeout(SEND_TIMEOUT)
            conn.sendall(data)
            conn.settimeout(self.idle_s)

        try:
            self.serve_stream(rfile, send, client)
        except OSError:
            pass  # the client went away
        finally:
            with self._lock:
                self._conns.pop(conn, None)
            rfile.close()
            conn.close()

    def _admit(self, conn: socket.socket) -> _Client | None:
        """Register ``conn``; when the daemon is full, close the connection idle the
        longest to make room (None: every connection is inside a request)."""
        with self._lock:
            if len(self._conns) >= MAX_CLIENTS:
                idle = [c for c in self._conns.values() if not c.busy]
                if not idle:
                    return None
                oldest = min(idle, key=lambda c: c.idle_since)
                del self._conns[oldest.sock]
                with contextlib.suppress(OSError):
                    oldest.sock.shutdown(socket.SHUT_RDWR)  # its thread sees the end
            client = self._conns[conn] = _Client(conn)
            return client

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
            client = self._admit(conn)
            if client is None:
                with contextlib.suppress(OSError):
                    conn.settimeout(1.0)
                    conn.sendall(
                        _error(
                            None, CONFLICT, f"{MAX_CLIENTS} clients are inside requests",
                            "retry when one has its answer",
                        )
                    )  # fmt: skip
                conn.close()
                continue
            threading.Thread(target=self._connection, args=(client,), daemon=True).start()


def rss_bytes() -> int:
    """The resident memory of this process in bytes (0 where /proc is missing)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
