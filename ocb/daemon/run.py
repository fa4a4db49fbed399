"""Running a daemon: its run directory and socket (private to their owner), its log,
signals, the watcher beside the server, and a clean stop.

``B/run/`` is made 0700 and the socket 0600; a run directory that another user owns or
that others may write is refused, as is a brain whose writer lock is held (naming the
holder's pid). A socket file left by a daemon that died is found (nothing answers on it)
and replaced.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TextIO

from ocb.daemon.live import LiveBrain
from ocb.daemon.protocol import RpcError, call, connect, run_dir, socket_address, socket_path
from ocb.daemon.server import IDLE_S, Method, Server
from ocb.daemon.stop import lock_holder
from ocb.daemon.tail import LogTail
from ocb.daemon.watcher import Follower
from ocb_events.durable import open_private, private_dir
from ocb_events.errors import InputError, OcbError, WorkspaceError

__all__ = ["DaemonLog", "bind", "daemon_argv", "private_run_dir", "serve", "spawn", "watch"]

Methods = Callable[[LiveBrain], Mapping[str, Method]]


class DaemonLog:
    """``B/run/daemon.log``: one UTC-stamped line per event, echoed to ``echo`` unless
    ``echo`` is that same file (a detached daemon's stderr is its log)."""

    def __init__(self, path: Path, echo: TextIO | None) -> None:
        self._file = os.fdopen(
            open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND), "a", encoding="utf-8"
        )
        self._echo = None if echo is not None and _same_file(echo, self._file) else echo
        self._lock = threading.Lock()

    def __call__(self, msg: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        line = f"{stamp} {msg}\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()
            if self._echo is not None:
                self._echo.write(line)
                self._echo.flush()

    def close(self) -> None:
        self._file.close()


def _same_file(a: TextIO, b: TextIO) -> bool:
    try:
        sa, sb = os.fstat(a.fileno()), os.fstat(b.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (a test's buffer)
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def private_run_dir(brain: Path) -> Path:
    """``brain/run``, made 0700 when missing.

    Raises:
        InputError: it is a symlink or not a directory, another user owns it, or its
            group or others may write it.
    """
    d = run_dir(brain)
    try:
        d.mkdir(mode=0o700)
        os.chmod(d, 0o700)
    except FileExistsError:
        pass
    st = d.lstat()
    if not stat.S_ISDIR(st.st_mode):
        raise InputError(f"{d} is not a directory", f"remove it, then start the daemon: rm {d}")
    if st.st_uid != os.getuid():
        raise InputError(
            f"{d} is owned by uid {st.st_uid}, not by you (uid {os.getuid()})",
            "run the daemon as the brain's owner",
        )
    if st.st_mode & 0o022:
        raise InputError(
            f"{d} is writable by its group or others (mode {stat.S_IMODE(st.st_mode):o})",
            f"make it private, then start the daemon: chmod 700 {d}",
        )
    return d


def bind(brain: Path) -> socket.socket:
    """The listening socket of ``brain`` (0600), replacing a stale one.

    Raises:
        InputError: a daemon already answers on it, or the path is not a socket.
    """
    path = socket_path(brain)
    if path.exists() or path.is_symlink():
        if not path.is_socket():
            raise InputError(f"{path} is not a socket", f"remove it: rm {path}")
        live = connect(brain, timeout=1.0)
        if live is not None:
            live.close()
            raise InputError(f"a daemon already serves {brain}", "stop it: ocb serve stop")
        path.unlink()  # left by a daemon that died
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        with socket_address(path) as address:
            sock.bind(address)
    except OSError as exc:
        sock.close()
        raise InputError(
            f"cannot listen on {path}: {exc.strerror or exc}",
            "start the daemon on a brain whose path is shorter",
        ) from None
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(64)
    return sock


def serve(
    brain_path: Path,
    workspace: Path | None,
    methods: Methods,
    *,
    stdio: bool = False,
    debounce_ms: int = 300,
    timeout: float = 60.0,
    idle_s: float = IDLE_S,
    echo: TextIO | None = None,
) -> None:
    """Serve ``brain_path`` until SIGINT, SIGTERM, a ``shutdown`` request or (with
    ``stdio``) the end of stdin: open it as the only writer, reconcile it with the
    workspace, watch the workspace, answer requests, then stop cleanly (in-flight
    requests finish, every write is flushed, snapshots are written, the socket goes).
    A signal that comes while it is stopping ends the process at once: what was
    acknowledged is durable already, and nothing else was promised.

    Raises:
        BrainLocked: another process (a daemon) writes the brain.
        InputError: an unsafe run directory, or a daemon already answers.
    """
    brain = LiveBrain(brain_path, create=workspace is not None)
    try:
        d = private_run_dir(brain_path)
        log = DaemonLog(d / "daemon.log", echo)
    except BaseException:
        brain.close(snapshot=False)
        raise
    try:
        _serve(
            brain, workspace, methods, log,
            stdio=stdio, debounce_ms=debounce_ms, timeout=timeout, idle_s=idle_s,
        )  # fmt: skip
    finally:
        log.close()


def _serve(
    brain: LiveBrain,
    workspace: Path | None,
    methods: Methods,
    log: DaemonLog,
    *,
    stdio: bool,
    debounce_ms: int,
    timeout: float,
    idle_s: float,
) -> None:
    brain.warn = lambda m: log(f"warning: {m}")
    ws = workspace or (Path(brain.store.workspace) if brain.store.workspace else None)
    follower = Follower(brain, ws, log, debounce_ms=debounce_ms)
    tail = LogTail(brain, log)  # a shared log: fold what other brains append
    server = Server(
        brain,
        methods(brain),
        timeout=timeout,
        idle_s=idle_s,
        log=log,
        info=lambda: follower.info() | tail.info(),
    )
    server.start()
    try:
        tail.start(server.writer.submit)
        follower.start(server.writer.submit)  # reconciled once it returns
        brain.warm()
        listener = None if stdio else bind(brain.path)
    except BaseException:
        follower.stop()
        tail.stop()
        server.close()
        raise
    previous = {
        s: signal.signal(s, _on_signal(server, brain.path, log))
        for s in (signal.SIGINT, signal.SIGTERM)
    }
    wakeup = signal.set_wakeup_fd(server.wake_fd, warn_on_full_buffer=False)
    log(
        f"serving {brain.path} (pid {os.getpid()}, seq {brain.log.last_seq}"
        + (f", watching {ws})" if ws else ")")
        + (" on stdio" if stdio else "")
    )
    try:
        if listener is not None:
            server.serve_unix(listener)
        else:
            _serve_stdio(server)
    finally:
        if listener is not None:
            listener.close()
            socket_path(brain.path).unlink(missing_ok=True)
        follower.stop()
        tail.stop()
        signal.set_wakeup_fd(wakeup)
        server.close()
        for s, h in previous.items():
            signal.signal(s, h)
        log(f"stopped (seq {brain.log.last_seq})")


def _on_signal(server: Server, brain: Path, log: DaemonLog) -> Callable[[int, Any], None]:
    """The handler of SIGINT and SIGTERM: the first stops the server cleanly; one that
    comes while it is stopping (a request that will not finish, a stuck write) ends
    the process at once, as a kill would, but says so first."""

    def handle(signum: int, _frame: Any) -> None:
        if not server.stopping:
            server.stop()
            return
        name = signal.Signals(signum).name
        log(f"stop forced by {name}: requests still running are dropped; every write "
            "that was acknowledged is in the log")  # fmt: skip
        with contextlib.suppress(OSError):
            socket_path(brain).unlink()
        os._exit(128 + signum)

    return handle


def watch(brain_path: Path, workspace: Path | None, *, debounce_ms: int, echo: TextIO) -> None:
    """Only the watcher: sync ``workspace`` into the brain as it changes (after a
    reconcile), one line per sync on ``echo``, until SIGINT or SIGTERM.

    Raises:
        BrainLocked: another process (a daemon) writes the brain.
        WorkspaceError: no workspace given and none recorded.
    """

    def say(msg: str) -> None:
        echo.write(msg + "\n")
        echo.flush()

    def inline(fn: Callable[[], Any]) -> Future[Any]:
        done: Future[Any] = Future()
        try:
            done.set_result(fn())
        except Exception as exc:
            done.set_exception(exc)
        return done

    with LiveBrain(
        brain_path, create=workspace is not None, warn=lambda m: say(f"warning: {m}")
    ) as brain:
        ws = workspace or (Path(brain.store.workspace) if brain.store.workspace else None)
        if ws is None:
            raise WorkspaceError("this brain has no workspace to watch", "pass --workspace DIR")
        follower = Follower(brain, ws, say, debounce_ms=debounce_ms)
        previous = {
            s: signal.signal(s, lambda *_: follower.stop_soon())
            for s in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            listening = f"watching {ws} for {brain.path} (Ctrl-C stops)"
            follower.run(inline, ready=lambda: say(listening))
        finally:
            for s, h in previous.items():
                signal.signal(s, h)


def _serve_stdio(server: Server) -> None:
    """One client on stdin/stdout; stdout carries nothing but answers."""
    out = sys.__stdout__.buffer if sys.__stdout__ is not None else None
    if out is None or sys.__stdin__ is None:
        raise InputError("no stdin/stdout to serve on", "run ocb serve without --stdio")
    lock = threading.Lock()

    def send(data: bytes) -> None:
        with lock:
            out.write(data)
            out.flush()

    worker = threading.Thread(
        target=server.serve_stream, args=(sys.__stdin__.buffer, send), daemon=True
    )
    worker.start()
    while worker.is_alive() and not server.stopping:
        worker.join(0.2)
    server.stop()


def daemon_argv(argv: list[str]) -> list[str]:
    """The command line of ``ocb <argv>`` in a new process of this interpreter.

    NOTE: ``-P`` keeps the caller's directory off the import path: ``python -m`` would
    otherwise put it first, so a ``replay.py`` or a folder named ``ocb`` there would be
    imported in place of ours. The process also starts in the brain's private run
    directory (``spawn``), so nothing is looked up relative to where the caller stands.
    """
    return [sys.executable, "-P", "-m", "ocb.entry", *argv]


def spawn(
    argv: list[str], brain: Path, *, create: bool = False, wait_s: float = 60.0
) -> dict[str, Any]:
    """Start ``ocb <argv>`` (a foreground ``serve``) in the background, detached from
    this terminal, in the brain's run directory and with nothing imported from the
    caller's directory, and wait until it answers ``hello``. When another client
    started a daemon of the brain first (a start race), that daemon's ``hello`` is
    returned; ``started`` says which happened.

    Args:
        create: make the brain's directory (private) when it is missing, for a daemon
            that builds a new brain.

    Raises:
        OcbError: it exited first (its error line), or did not answer in time.
    """
    if create:
        private_dir(brain)
    d = private_run_dir(brain)
    log = d / "daemon.log"
    fd = open_private(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    with os.fdopen(fd, "a", encoding="utf-8") as errlog:
        since = errlog.tell()
        proc = subprocess.Popen(
            daemon_argv(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
            cwd=d,
            start_new_session=True,
        )
    deadline = time.monotonic() + wait_s
    lost = ""  # the child's error, when it lost a start race to another daemon
    while time.monotonic() < deadline:
        code = proc.poll() if not lost else None
        if code is not None:
            error, hint = _failure(log, since)
            if lock_holder(brain) is None and _hello(brain) is None:
                raise OcbError(f"the daemon exited with code {code}: {error}", hint or f"see {log}")
            lost = error  # another daemon holds the brain: wait for it to answer
        hello = _hello(brain)
        if hello is not None and (lost or hello.get("pid") == proc.pid):
            return {**hello, "started": not lost}
        time.sleep(0.05)
    if not lost:
        proc.terminate()
        raise OcbError(f"the daemon did not answer within {wait_s:g} s", f"see {log}")
    raise OcbError(f"the daemon could not start: {lost}", f"see {log}")


def _hello(brain: Path) -> dict[str, Any] | None:
    sock = connect(brain, timeout=5.0)
    if sock is None:
        return None
    try:
        got: dict[str, Any] = call(sock, "hello")
        return got
    except (RpcError, OSError):
        return None
    finally:
        sock.close()


def _failure(log: Path, since: int) -> tuple[str, str]:
    """The error and hint lines a daemon that failed to start wrote to its log after
    offset ``since`` (else its last line)."""
    try:
        with log.open("rb") as f:
            f.seek(since)
            lines = f.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return "(no log)", ""
    error = next((x[7:] for x in reversed(lines) if x.startswith("error: ")), "")
    hint = next((x[6:] for x in reversed(lines) if x.startswith("hint: ")), "")
    return (error or (lines[-1] if lines else "(nothing in its log)")), hint
