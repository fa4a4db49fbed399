"""The process that runs the queries of one analytics store, so that no query can hold
up, grow or outlive the process that asked for it (``replay.isolation`` starts it).

It opens the store read-only with the confined configuration it is sent, a memory limit
(``memory_limit``; nothing spills to disk) and a number of threads, then caps its own
data segment a little above that limit (``RLIMIT_DATA``), for what DuckDB does not count
(planning a statement can take gigabytes). Each query is interrupted
(``con.interrupt()``) when its time is up, again and again, since an interrupt that
lands while DuckDB binds or plans is lost; if it has not stopped a moment later the
process exits (``EXIT_TIMEOUT``), whether or not anyone still waits for it.

Frames both ways are an 8-byte length and a pickle. In: ``{"op": "open", ...}``, then
``{"op": "query", ...}`` any number of times, then ``{"op": "close"}`` (the process
waits for the next store); the end of its input ends the process. Out: ``("ready",)``
and ``("closed",)``; per query ``("head", columns, types)``, ``("rows", [...])``...,
``("end",)``, or ``("error", kind, exception class, first line)`` at any point, where
kind is ``timeout``, ``memory``, ``result``, ``files`` or ``sql``.

NOTE: run by path (``python -P replay/worker.py``): the standard library and duckdb
only, nothing of ours (importing the ``replay`` package would load half the product);
duckdb is imported where it is used, so that the framing can be imported alone.
"""

from __future__ import annotations

import itertools
import os
import pickle
import resource
import struct
import sys
import threading
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

HEADROOM = 256 << 20
"""Bytes of data segment allowed above the memory limit (Python, results in flight)."""
BATCH = 2048
"""Rows fetched and sent at a time."""
NO_HOME = "/nonexistent"
"""The home directory DuckDB is given: the user's stays out of what it shows (its
extension and secret directories derive from it, in settings and errors)."""
GRACE_S = 1.0
"""How long after its time is up a query may take to stop before the process exits."""
EXIT_TIMEOUT = 124
"""The exit code of a process whose query would not stop."""
FRAME = struct.Struct(">Q")
ZONED = {"TIMESTAMP WITH TIME ZONE": "TIMESTAMP", "TIMESTAMPTZ_NS": "TIMESTAMP_NS"}
"""DuckDB's zoned timestamp types, and the same without a zone."""


def read_frame(stream: IO[bytes]) -> Any:
    """The next object on ``stream``, or None at its end."""
    head = stream.read(FRAME.size)
    if len(head) < FRAME.size:
        return None
    (n,) = FRAME.unpack(head)
    data = stream.read(n)
    if len(data) < n:
        return None
    return pickle.loads(data)


def write_frame(stream: IO[bytes], obj: object) -> int:
    """Write one object; return the bytes its pickle took."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(FRAME.pack(len(data)) + data)
    stream.flush()
    return len(data)


def first_line(exc: BaseException) -> str:
    lines = [x for x in str(exc).splitlines() if x.strip()]
    return lines[0] if lines else type(exc).__name__


# --------------------------------------------------------------------------- opening


def _vm(field: str) -> int:
    """A ``Vm*`` field of this process in bytes (0 where /proc is missing)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def connect(
    path: str, config: dict[str, Any], *, memory_mb: int, threads: int
) -> duckdb.DuckDBPyConnection:
    """The store at ``path``, read-only, confined by ``config``, with times in UTC, no
    spilling, ``memory_mb`` MiB and ``threads`` threads, its settings locked."""
    import duckdb

    full = {
        **config,
        "memory_limit": f"{memory_mb}MiB",
        "threads": threads,
        "temp_directory": "",  # nothing spills: a query over its memory fails instead
        "home_directory": NO_HOME,
    }
    con = duckdb.connect(path, read_only=True, config=full)
    try:
        con.execute("SET GLOBAL TimeZone = 'UTC'")  # ICU's: not a connect option
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def cap_memory(memory_mb: int) -> None:
    """Cap the data segment at what it holds now, plus ``memory_mb`` and ``HEADROOM``."""
    used = _vm("VmData")
    if not used:
        return
    limit = used + (memory_mb << 20) + HEADROOM
    _soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


# --------------------------------------------------------------------------- fetching


def tz_projection(types: list[str]) -> str | None:
    """A projection that casts every column holding a zoned timestamp (also in lists,
    structs or maps) to the same timestamp without a zone, by position; None when
    there is none.

    DuckDB hands Python a zoned timestamp through pytz or zoneinfo objects, which we
    neither depend on nor unpickle; the session's zone is UTC, so the cast gives UTC
    wall time (``with_utc`` puts the zone back on top-level values).
    """
    if not any(_zoned(t) for t in types):
        return None
    return ", ".join(
        f"CAST(#{i} AS {_unzoned(t)})" if _zoned(t) else f"#{i}" for i, t in enumerate(types, 1)
    )


def _zoned(t: str) -> bool:
    return any(z in t for z in ZONED)


def _unzoned(t: str) -> str:
    for zoned, plain in ZONED.items():
        t = t.replace(zoned, plain)
    return t


def with_utc(rows: list[tuple[Any, ...]], types: list[str]) -> list[tuple[Any, ...]]:
    """The rows with the zone put back (UTC) on top-level zoned timestamps (one out of
    Python's range comes as DuckDB's text and stays so)."""
    zoned = {i for i, t in enumerate(types) if t in ZONED}
    if not zoned:
        return rows
    return [
        tuple(
            v.replace(tzinfo=UTC) if i in zoned and isinstance(v, datetime) else v
            for i, v in enumerate(r)
        )
        for r in rows
    ]


class _Watchdog:
    """Interrupts a connection's query once ``timeout_s`` has passed, and keeps doing
    so; ends the process ``GRACE_S`` later if the query is still running."""

    def __init__(self, con: duckdb.DuckDBPyConnection, timeout_s: float) -> None:
        self._con = con
        self._timeout_s = timeout_s
        self._done = threading.Event()
        self.fired = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        if self._done.wait(self._timeout_s):
            return
        self.fired = True
        for _ in range(int(GRACE_S / 0.05)):
            self._con.interrupt()
            if self._done.wait(0.05):
                return
        os._exit(EXIT_TIMEOUT)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def _rows(
    con: duckdb.DuckDBPyConnection, req: dict[str, Any], out: IO[bytes], dog: _Watchdog
) -> tuple[str, str] | None:
    """Run the query of ``req`` and send its frames; the error kind and message when
    the result outgrew ``max_result_bytes`` or its time ran out while it was sent."""
    rel = con.sql(req["sql"], params=req.get("params"))
    if rel is None:
        write_frame(out, ("head", [], []))
        return None
    names, types = list(rel.columns), [str(t) for t in rel.types]
    projection = tz_projection(types)
    if projection is not None:
        rel = rel.project(projection)
    write_frame(out, ("head", names, types))
    size, limit = 0, int(req["max_result_bytes"])
    rows = rel.iter_rows(BATCH)  # one run, the result held by DuckDB (its memory limit)
    while batch := list(itertools.islice(rows, BATCH)):
        if dog.fired:
            return "timeout", "interrupted while its rows were sent"
        data = pickle.dumps(("rows", with_utc(batch, types)), protocol=pickle.HIGHEST_PROTOCOL)
        size += len(data)
        if size > limit:
            return "result", f"the result is over {limit >> 20} MiB"
        out.write(FRAME.pack(len(data)) + data)
    return None


def query(con: duckdb.DuckDBPyConnection, req: dict[str, Any], out: IO[bytes]) -> None:
    """Run one query under its watchdog, sending its frames or one error frame."""
    import duckdb

    dog = _Watchdog(con, float(req["timeout_s"]))
    error: tuple[str, str, str] | None = None
    try:
        over = _rows(con, req, out, dog)
        if over is not None:
            error = (over[0], "Limit", over[1])
    except duckdb.InterruptException as exc:
        error = ("timeout" if dog.fired else "sql", type(exc).__name__, first_line(exc))
    except (duckdb.OutOfMemoryException, MemoryError) as exc:
        error = ("memory", type(exc).__name__, first_line(exc))
    except duckdb.PermissionException as exc:
        error = ("files", type(exc).__name__, first_line(exc))
    except duckdb.Error as exc:
        error = ("sql", type(exc).__name__, first_line(exc))
    finally:
        dog.stop()
    write_frame(out, ("end",) if error is None else ("error", *error))


def _open(req: dict[str, Any]) -> tuple[duckdb.DuckDBPyConnection | None, tuple[str, ...]]:
    import duckdb

    try:
        con = connect(
            req["path"], req["config"], memory_mb=req["memory_mb"], threads=req["threads"]
        )
    except duckdb.Error as exc:
        return None, ("error", "open", type(exc).__name__, first_line(exc))
    cap_memory(req["memory_mb"])
    return con, ("ready",)


def main() -> None:
    out = os.fdopen(os.dup(1), "wb")  # frames only: anything printed goes to stderr
    os.dup2(2, 1)
    con: duckdb.DuckDBPyConnection | None = None
    while (req := read_frame(sys.stdin.buffer)) is not None:
        if req["op"] == "open":
            con, answer = _open(req)
            write_frame(out, answer)
        elif req["op"] == "close":
            if con is not None:
                con.close()
                con = None
            write_frame(out, ("closed",))
        elif con is not None:
            query(con, req, out)
    if con is not None:
        con.close()


if __name__ == "__main__":
    main()
