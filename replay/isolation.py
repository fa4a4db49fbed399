"""Queries over the analytics store run in a worker process of their own
(``replay.worker``), within limits, and can always be abandoned.

DuckDB honours ``con.interrupt()`` and its memory limit only while it executes: binding
and planning a statement (a ``UNION ALL`` of thousands of arms, a few nested ``NOT
MATERIALIZED`` CTEs) can take minutes and gigabytes and ignore both. A worker process
holds nothing the asking process needs: when a query's time is up the worker interrupts
it, and exits if it will not stop; the asking side kills it a moment later if it has
not answered; ``Running.stop`` kills every worker of a brain at once (a daemon that
stops); and the memory it took goes with it.

A worker serves the queries of one ``AnalyticsStore`` while that holds the store's lock
and is ended when the store closes. Results come back as pickles, read with an
unpickler that builds only the value types a query returns.
"""

from __future__ import annotations

import io
import math
import os
import pickle
import select
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from ocb_events.errors import AnalyticsError
from replay import confinement
from replay.store_meta import QueryResult
from replay.worker import EXIT_TIMEOUT, FRAME, GRACE_S, write_frame

WORKER = Path(__file__).with_name("worker.py")
READY_S = 60.0
"""How long a worker may take to start and open the store."""
KILL_S = 1.0
"""How long past its own grace a worker may stay silent before it is killed."""
_TIMEOUT_KEY, _MEMORY_KEY, _RESULT_KEY = "sql.timeout_s", "sql.memory_mb", "sql.max_result_mb"
_NARROW = "narrow the query (a WHERE on seq or ts, fewer columns, a LIMIT)"


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """What one query may take (the ``sql.*`` settings)."""

    timeout_s: float = 30.0
    memory_mb: int = 1024
    threads: int = 2
    max_result_mb: int = 64


def timed_out(limits: Limits) -> AnalyticsError:
    return AnalyticsError(
        f"the query ran past its {limits.timeout_s:g} s limit and was stopped",
        f"{_NARROW}, or raise the limit: ocb config {_TIMEOUT_KEY} {limits.timeout_s * 4:g}",
    )


def out_of_memory(limits: Limits) -> AnalyticsError:
    return AnalyticsError(
        f"the query needed more than its {limits.memory_mb} MiB of memory and was stopped",
        f"{_NARROW}, or raise the cap: ocb config {_MEMORY_KEY} {limits.memory_mb * 4}",
    )


def too_large(limits: Limits) -> AnalyticsError:
    return AnalyticsError(
        f"the query's result is over its {limits.max_result_mb} MiB limit",
        f"{_NARROW}, or raise the limit: ocb config {_RESULT_KEY} {limits.max_result_mb * 4}",
    )


def _not_started() -> AnalyticsError:
    return AnalyticsError(
        f"the query process did not start within {READY_S:g} s",
        "retry when this machine is less busy",
    )


def stopped() -> AnalyticsError:
    return AnalyticsError(
        "the query was stopped: the brain is closing", "run it again once the brain is open"
    )


class Running:
    """The worker processes of one brain: the busy ones, and one idle one kept for the
    next store (a daemon's queries then skip starting Python and DuckDB). ``stop`` kills
    them all and refuses new ones (a daemon that stops ends its queries at once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy: set[subprocess.Popen[bytes]] = set()
        self._idle: list[subprocess.Popen[bytes]] = []
        self._stopped = False
        # the idle worker ends with its owner (a closed brain, this process's exit)
        weakref.finalize(self, _end_idle, self._idle)

    @property
    def stopped(self) -> bool:
        return self._stopped

    def check(self) -> None:
        """Raise AnalyticsError once ``stop`` was called."""
        if self._stopped:
            raise stopped()

    def take(self) -> subprocess.Popen[bytes]:
        """An idle worker process, or a new one; busy until ``release``.

        Raises:
            AnalyticsError: ``stop`` was called, or no process could start.
        """
        with self._lock:
            self.check()
            while self._idle:
                proc = self._idle.pop()
                if proc.poll() is None:
                    self._busy.add(proc)
                    return proc
            proc = _spawn()
            self._busy.add(proc)
            return proc

    def release(self, proc: subprocess.Popen[bytes], *, idle: bool) -> None:
        """A worker done with its store: kept as the idle one (``idle``, and none is
        kept yet), else ended."""
        with self._lock:
            self._busy.discard(proc)
            if idle and not self._idle and not self._stopped and proc.poll() is None:
                self._idle.append(proc)
                return
        _end(proc)

    def stop(self) -> None:
        """Kill every worker and refuse new ones (their queries end with ``stopped``)."""
        with self._lock:
            self._stopped = True
            busy = sorted(self._busy, key=lambda p: p.pid)
            idle, self._idle[:] = list(self._idle), []
        for proc in busy + idle:
            _kill(proc)
        for proc in busy:
            proc.wait()  # its store's close releases it
        for proc in idle:
            _end(proc)

    def pids(self) -> list[int]:
        """The worker processes alive now (busy or idle)."""
        with self._lock:
            procs = [*self._busy, *self._idle]
        return sorted(p.pid for p in procs if p.poll() is None)


def _end_idle(idle: list[subprocess.Popen[bytes]]) -> None:
    while idle:
        _end(idle.pop())


def _spawn() -> subprocess.Popen[bytes]:
    # the worker finds duckdb where this process found it, and runs by path: -P keeps
    # its directory off sys.path
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    try:
        return subprocess.Popen(
            [sys.executable, "-P", str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    except OSError as exc:
        raise AnalyticsError(
            f"could not start a process for the query: {exc.strerror or exc}",
            "check the process and memory limits of this machine",
        ) from exc


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Close a worker's input (it exits), killing it if it does not exit at once."""
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass
    try:
        proc.wait(KILL_S)
    except subprocess.TimeoutExpired:
        _kill(proc)
        proc.wait()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        proc.kill()
    except OSError:  # it has exited already
        pass


_SAFE = {
    "datetime": {"datetime", "date", "time", "timedelta", "timezone"},
    "decimal": {"Decimal"},
    "uuid": {"UUID", "SafeUUID"},
}
"""The classes a query's values are made of (besides what pickle builds itself)."""


class _Values(pickle.Unpickler):
    """Builds only the types a query's values have."""

    def find_class(self, module: str, name: str) -> Any:
        if name in _SAFE.get(module, ()):
            return super().find_class(module, name)
        raise _Unknown(f"{module}.{name}")


class _Unknown(pickle.UnpicklingError):
    """A value of a type a result may not hold."""


class Worker:
    """A worker process with the store at ``path`` open, confined and limited, until
    ``close``.

    Raises:
        AnalyticsError: ``running`` was stopped, or the worker could not open the store.
    """

    def __init__(self, path: Path, limits: Limits, running: Running) -> None:
        self.limits = limits
        self._running = running
        self._proc = running.take()
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._in, self._out = self._proc.stdin, self._proc.stdout
        self._sound = False
        request = {
            "op": "open",
            "path": str(path),
            "config": dict(confinement.CONFIG),
            "memory_mb": limits.memory_mb,
            "threads": limits.threads,
        }
        try:
            self._send(request)
            got = self._receive(time.monotonic() + READY_S, late=_not_started)
        except BaseException:
            self.close()
            raise
        if got[0] != "ready":
            self.close()
            raise AnalyticsError(
                f"the query process could not open the store: {got[-1]}",
                f"delete {path}; it is derived from the log and rebuilt on the next use",
            )
        self._sound = True

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def sound(self) -> bool:
        """Whether the worker can run another query (it stopped its last one cleanly)."""
        return self._sound

    def close(self) -> None:
        """Close the store in the worker (it is kept for the next store when it stopped
        its queries cleanly), or end the worker."""
        sound, self._sound = self._sound, False
        if sound:
            try:
                self._send({"op": "close"})
                sound = self._receive(time.monotonic() + READY_S) == ("closed",)
            except AnalyticsError:
                sound = False
        self._running.release(self._proc, idle=sound)

    def _send(self, obj: object) -> None:
        try:
            write_frame(self._in, obj)
        except (BrokenPipeError, ValueError, OSError):
            raise self._ended(math.inf) from None

    def query(self, sql: str, params: list[Any] | Mapping[str, Any] | None) -> QueryResult:
        """Run one statement (checked already) and return its rows.

        Raises:
            AnalyticsError: a DuckDB error (its first line, with a hint), file access,
                the query's time, memory or result limit, or the brain closing.
        """
        lim = self.limits
        deadline = time.monotonic() + lim.timeout_s + GRACE_S + KILL_S
        request = {
            "op": "query",
            "sql": sql,
            "params": params,
            "timeout_s": lim.timeout_s,
            "max_result_bytes": lim.max_result_mb << 20,
        }
        self._send(request)
        head = self._receive(deadline)
        rows: list[tuple[Any, ...]] = []
        got = head
        while got[0] not in ("end", "error"):
            got = self._receive(deadline)
            if got[0] == "rows":
                rows += got[1]
        if got[0] == "error":
            if got[1] in ("memory", "result"):
                self._sound = False  # what it took may stay with it: end it after
            raise self._error(got)
        return QueryResult(list(head[1]), list(head[2]), rows)

    def _error(self, frame: tuple[Any, ...]) -> AnalyticsError:
        kind, cls, line = frame[1:]
        if kind == "timeout":
            return timed_out(self.limits)
        if kind == "memory":
            return out_of_memory(self.limits)
        if kind == "result":
            return too_large(self.limits)
        if kind == "files":
            return confinement.no_files()
        return AnalyticsError(str(line), confinement.hint(str(cls)))

    def _receive(
        self, deadline: float, late: Callable[[], AnalyticsError] | None = None
    ) -> tuple[Any, ...]:
        """The next frame, or the error that explains why none came by ``deadline``
        (``late``, by default the query's timeout; the worker is killed then)."""
        late = late or (lambda: timed_out(self.limits))
        head = self._read(FRAME.size, deadline, late)
        (n,) = FRAME.unpack(head)
        if n > (self.limits.max_result_mb << 20) + (1 << 20):
            self._abandon()
            raise too_large(self.limits)
        data = self._read(n, deadline, late)
        try:
            got = _Values(io.BytesIO(data)).load()
        except _Unknown as exc:
            self._abandon()
            raise AnalyticsError(
                f"the query returned a value ocb sql cannot show (a {exc})",
                "cast that column to text: SELECT col::VARCHAR ...",
            ) from exc
        except (pickle.UnpicklingError, EOFError, ValueError) as exc:
            self._abandon()
            raise AnalyticsError(
                f"the query process sent what is not a result ({exc})",
                "run the query again",
            ) from exc
        assert isinstance(got, tuple)
        return got

    def _read(self, n: int, deadline: float, late: Callable[[], AnalyticsError]) -> bytes:
        fd, parts, left = self._out.fileno(), list[bytes](), n
        while left:
            wait = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(wait, 0))[0] if wait > 0 else []
            if not ready:
                self._abandon()
                raise late()
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                raise self._ended(deadline)
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)

    def _abandon(self) -> None:
        """Kill the worker (it is not used again)."""
        self._sound = False
        _kill(self._proc)
        self._proc.wait()

    def _ended(self, deadline: float) -> AnalyticsError:
        """Why the worker stopped answering: the brain closing, its time up, or a
        signal (most likely the machine's memory)."""
        self._sound = False
        code = self._proc.wait()
        if self._running.stopped:
            return stopped()
        if code == EXIT_TIMEOUT or time.monotonic() >= deadline:
            return timed_out(self.limits)
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        if code < 0 and -code in (signal.SIGKILL, signal.SIGABRT, signal.SIGSEGV):
            how += " (out of memory?)"
        return AnalyticsError(
            f"the query's process ended ({how})",
            f"{_NARROW}, or lower {_MEMORY_KEY} below this machine's free memory",
        )
