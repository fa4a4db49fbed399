"""SQL can never wedge a real daemon: a query runs outside the gate in a worker process,
ends at ``sql.timeout_s`` (even one DuckDB is still planning) or ``sql.memory_mb`` with
one line, reads and writes are answered meanwhile, and stopping the daemon ends its
queries and leaves no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ocb.daemon.protocol import USER_ERROR, RpcError
from tests.ocb.daemon.support import DEADLINE, daemon, env, ocb, rpc, wait_for

ENDLESS = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM t) SELECT count(*) FROM t"
LISTS = "SELECT max(length(l)) FROM (SELECT list(range) l FROM range(1500000000))"
NARROW = "narrow the query (a WHERE on seq or ts, fewer columns, a LIMIT)"


def planned_for_ever(k: int = 24) -> str:
    """Short SQL whose plan doubles with each CTE: DuckDB binds and plans it for hours,
    deaf to interrupts and past its memory limit."""
    ctes = ["a0 AS (SELECT 1 x)"] + [
        f"a{i} AS NOT MATERIALIZED (SELECT * FROM a{i - 1} UNION ALL SELECT * FROM a{i - 1})"
        for i in range(1, k + 1)
    ]
    return "WITH " + ", ".join(ctes) + f" SELECT count(*) FROM a{k}"


def workers(pid: int) -> list[int]:
    """The query worker processes of the daemon ``pid`` that have a store open (running
    a query; an idle worker holds no store)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes()
            ppid = int(stat.rpartition(")")[2].split()[1])
            if ppid != pid or b"replay/worker.py" not in cmd:
                continue
            files = [os.readlink(f) for f in (d / "fd").iterdir()]
        except OSError:
            continue
        if any(f.endswith("analytics.duckdb") for f in files):
            found.append(int(d.name))
    return sorted(found)


def gone(pids: list[int]) -> bool:
    return not any(Path(f"/proc/{p}").exists() for p in pids)


def configure(brain: Path, **values: object) -> None:
    """Record ``sql.*`` settings, and build the analytics store (so that two queries
    started at once do not wait for each other's catching up)."""
    for key, value in values.items():
        assert rpc(brain, "config", key=f"sql.{key}", value=str(value))
    assert rpc(brain, "sql", statement="SELECT count(*) AS n FROM events")[0]["n"] > 0


def rss(brain: Path) -> int:
    got: int = rpc(brain, "status")["rss_bytes"]
    return got


class Call:
    """``sql`` over RPC in a thread: its rows, or the error it got."""

    def __init__(self, brain: Path, statement: str) -> None:
        self.result: Any = None
        self.error: RpcError | None = None
        self._thread = threading.Thread(target=self._run, args=(brain, statement))
        self._thread.start()

    def _run(self, brain: Path, statement: str) -> None:
        try:
            self.result = rpc(brain, "sql", statement=statement)
        except RpcError as exc:
            self.error = exc

    def done(self) -> RpcError | None:
        self._thread.join(DEADLINE)
        assert not self._thread.is_alive()
        return self.error


def ocb_sql(brain: Path, statement: str) -> subprocess.Popen[str]:
    """``ocb sql`` as a user runs it, handed to the daemon by the thin client."""
    argv = [sys.executable, "-m", "ocb.entry", "sql", "--brain", str(brain), statement]
    return subprocess.Popen(argv, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip


def one_error(proc: subprocess.Popen[str]) -> str:
    """The error line of a failed ``ocb`` command: exit 1, nothing on stdout, an
    ``error:`` and a ``hint:`` line."""
    out, err = proc.communicate(timeout=DEADLINE)
    lines = err.splitlines()
    assert proc.returncode == 1 and out == "" and len(lines) == 2, err
    assert lines[1].startswith("hint: ")
    return lines[0]


@pytest.fixture
def served(built: Path) -> Iterator[subprocess.Popen[bytes]]:
    # a short request timeout: a read or write held up by SQL fails fast, not in 60 s
    with daemon(built, "--timeout", "20") as proc:
        yield proc


def test_endless_queries_hold_up_no_read_or_write_and_stop_ends_them(
    built: Path, served: subprocess.Popen[bytes]
) -> None:
    configure(built, timeout_s=3600)
    by_rpc, by_cli = Call(built, ENDLESS), ocb_sql(built, ENDLESS)
    running = wait_for(lambda: len(w := workers(served.pid)) == 2 and w, "both queries to run")
    answer = rpc(built, "query", text="how do I roll back a bad deploy", top=3)
    assert answer["results"]
    assert rpc(built, "learn", outcome=1.0, trace_id=answer["trace_id"])["trace_id"]
    assert rpc(built, "query", text="who is on call", record=False)["results"]
    assert rpc(built, "events", types=["outcome_recorded"])
    assert by_rpc.result is None and by_cli.poll() is None  # both still running
    stopped = ocb("serve", "stop", "--brain", str(built))
    assert stopped.returncode == 0, stopped.stderr
    assert served.wait(DEADLINE) == 0
    error = by_rpc.done()
    assert error is not None and error.code == USER_ERROR
    assert error.message == "the query was stopped: the brain is closing"
    assert one_error(by_cli) == "error: the query was stopped: the brain is closing"
    assert wait_for(lambda: gone(running), "the workers to be gone")


def test_sigterm_during_an_endless_query_leaves_no_process(
    built: Path, served: subprocess.Popen[bytes]
) -> None:
    configure(built, timeout_s=3600)
    call = Call(built, ENDLESS)
    running = wait_for(lambda: workers(served.pid), "the query to run")
    served.send_signal(signal.SIGTERM)
    assert served.wait(DEADLINE) == 0
    error = call.done()
    assert error is not None and error.message == "the query was stopped: the brain is closing"
    assert wait_for(lambda: gone(running), "the worker to be gone")


@pytest.mark.parametrize("statement", [ENDLESS, planned_for_ever()], ids=["runs", "plans"])
def test_a_query_ends_at_its_timeout_by_rpc_and_ocb_sql(
    built: Path, served: subprocess.Popen[bytes], statement: str
) -> None:
    """The recursive CTE runs for ever; the other is planned for ever, where DuckDB does
    not hear an interrupt: its worker is ended instead (room enough in memory that
    the time runs out first)."""
    configure(built, timeout_s=1, memory_mb=8192)
    line = "the query ran past its 1 s limit and was stopped"
    hint = f"hint: {NARROW}, or raise the limit: ocb config sql.timeout_s 4"
    call, cli = Call(built, statement), ocb_sql(built, statement)
    error = call.done()
    assert error is not None and (error.code, error.message) == (USER_ERROR, line)
    assert f"hint: {error.hint}" == hint
    out, err = cli.communicate(timeout=DEADLINE)
    assert (cli.returncode, out, err.splitlines()) == (1, "", [f"error: {line}", hint])
    assert rpc(built, "sql", statement="SELECT count(*) AS n FROM events")[0]["n"] > 0


def test_the_memory_cap_stops_a_query_and_the_daemon_keeps_its_memory(
    built: Path, served: subprocess.Popen[bytes]
) -> None:
    configure(built, memory_mb=64)
    before = rss(built)
    with pytest.raises(RpcError) as err:
        rpc(built, "sql", statement=LISTS)
    assert err.value.message == "the query needed more than its 64 MiB of memory and was stopped"
    assert err.value.hint == f"{NARROW}, or raise the cap: ocb config sql.memory_mb 256"
    line = one_error(ocb_sql(built, LISTS))
    assert line == f"error: {err.value.message}"
    assert rss(built) < before + (32 << 20)  # the query's memory was the worker's
    assert rpc(built, "sql", statement="SELECT 1 AS one") == [{"one": 1}]
