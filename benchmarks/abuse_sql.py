"""Abuse trials of ``ocb sql`` against a real daemon, full size and with the default
``sql.*`` settings: a query that runs for ever, UNION ALLs of thousands of arms, a
statement DuckDB plans for ever, and a query that wants gigabytes. During each, a query
and a learn must be answered, and after it the daemon must answer with its memory where
it was and no worker process left. ``TRIALS`` is run by ``bench_reliability.py
--live``; run alone:

    .venv/bin/python benchmarks/abuse_sql.py              # every trial, once
    .venv/bin/python benchmarks/abuse_sql.py endless list # those whose name has a word

Each trial builds the example brain in its scratch directory, serves it with ``ocb
serve`` and sends the attack as ``ocb sql`` (handed to the daemon by the thin client).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.abuse_support import ENV, Trial, example_brain  # noqa: E402
from benchmarks.live_support import ocb, served  # noqa: E402
from ocb.daemon.protocol import RpcError, call, connect  # noqa: E402
from replay.confinement import MAX_CHARS  # noqa: E402

__all__ = ["TRIALS"]

MB = 1 << 20
ENDLESS = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM t) SELECT count(*) FROM t"
LISTS = "SELECT max(length(l)) FROM (SELECT list(range) l FROM range(1500000000))"


def union(arms: int) -> str:
    return " UNION ALL ".join(f"SELECT {i} AS x" for i in range(arms))


UNION_20K = union(20_000)
LONGEST = next(n for n in range(20_000, 0, -100) if len(union(n)) <= MAX_CHARS)
"""The most arms (in hundreds) of a UNION ALL that ``ocb sql`` parses."""


def planned_for_ever(k: int = 24) -> str:
    """1.7 KB whose plan doubles with each CTE: DuckDB binds it for hours, deaf to an
    interrupt, past its memory limit."""
    ctes = ["a0 AS (SELECT 1 x)"] + [
        f"a{i} AS NOT MATERIALIZED (SELECT * FROM a{i - 1} UNION ALL SELECT * FROM a{i - 1})"
        for i in range(1, k + 1)
    ]
    return "WITH " + ", ".join(ctes) + f" SELECT count(*) FROM a{k}"


def rpc(brain: Path, method: str, **params: Any) -> Any:
    sock = connect(brain, timeout=120.0)
    if sock is None:
        raise RpcError(0, "no daemon")
    with sock:
        return call(sock, method, params)


def _children(pid: int, *, busy: bool = False) -> list[int]:
    """The query workers of process ``pid`` (``busy``: those with a store open)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rpartition(")")[2].split()[1])
            cmd = (d / "cmdline").read_bytes()
            if ppid != pid or b"replay/worker.py" not in cmd:
                continue
            files = [os.readlink(f) for f in (d / "fd").iterdir()] if busy else []
        except (OSError, ValueError, IndexError):
            continue
        if not busy or any(f.endswith("analytics.duckdb") for f in files):
            out.append(int(d.name))
    return out


class _Sql:
    """One attack in flight: ``ocb sql`` (the thin client hands it to the daemon), or
    the ``sql`` method itself for a statement longer than one argument may be (128 KiB
    on Linux)."""

    def __init__(self, brain: Path, statement: str) -> None:
        self.code, self.line = -1, ""
        if len(statement) < 100_000:
            argv = ocb("sql", "--brain", str(brain), statement)
            self._proc: subprocess.Popen[str] | None = subprocess.Popen(
                argv, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            self._thread = threading.Thread(target=self._wait)
        else:
            self._proc = None
            self._thread = threading.Thread(target=self._call, args=(brain, statement))
        self._thread.start()

    def _wait(self) -> None:
        assert self._proc is not None
        out, err = self._proc.communicate(timeout=600)
        self.code = self._proc.returncode
        self.line = err.splitlines()[0] if err else out.strip().splitlines()[-1]

    def _call(self, brain: Path, statement: str) -> None:
        try:
            rows = rpc(brain, "sql", statement=statement)
            self.code, self.line = 0, f"({len(rows)} rows)"
        except RpcError as exc:
            self.code, self.line = 1, f"error: {exc.message}"

    def running(self) -> bool:
        return self._thread.is_alive()

    def join(self) -> None:
        self._thread.join(600)


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * 4096
    except (OSError, ValueError, IndexError):
        return 0


class _Watch:
    """The peak RSS of a daemon and of its workers while an attack runs."""

    def __init__(self, pid: int) -> None:
        self.pid, self.daemon, self.workers = pid, 0, 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            self.daemon = max(self.daemon, _rss(self.pid))
            self.workers = max([self.workers, *(_rss(c) for c in _children(self.pid))])
            if self._done.wait(0.05):
                return

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def _during(brain: Path, busy: Callable[[], bool]) -> str:
    """Answer a query and a learn while ``busy``; their latencies, or what failed."""
    t0 = time.monotonic()
    answer = rpc(brain, "query", text="how do I roll back a bad deploy", top=3)
    t1 = time.monotonic()
    rpc(brain, "learn", outcome=1.0, trace_id=answer["trace_id"])
    t2 = time.monotonic()
    still = "while it ran" if busy() else "after it ended (too late to count)"
    return f"query {1000 * (t1 - t0):.0f} ms, learn {1000 * (t2 - t1):.0f} ms {still}"


def _attack(
    statement: str, *expect: str, concurrent: bool = True
) -> Callable[[Path], tuple[bool, str]]:
    """A trial: ``ocb sql statement`` against a served example brain must fail with one
    of the lines ``expect`` (none: succeed), with a query and a learn answered during it
    (``concurrent``), the daemon's memory back near where it was and no worker left but
    the idle one."""

    def trial(scratch: Path) -> tuple[bool, str]:
        _, brain = example_brain(scratch)
        with served(brain) as proc:
            rpc(brain, "sql", statement="SELECT count(*) FROM events")  # build the store
            before = rpc(brain, "status")["rss_bytes"]
            watch = _Watch(proc.pid)
            start = time.monotonic()
            sql = _Sql(brain, statement)
            during = ""
            if concurrent:
                while not _children(proc.pid, busy=True) and sql.running():
                    time.sleep(0.02)
                during = _during(brain, sql.running)
            sql.join()
            took = time.monotonic() - start
            watch.stop()
            after = rpc(brain, "status")["rss_bytes"]
            ok = rpc(brain, "sql", statement="SELECT 1 AS one") == [{"one": 1}]
            time.sleep(0.2)
            left = len(_children(proc.pid))  # the idle worker kept for the next query
        line = sql.line
        ended = (sql.code == 1 and line in [f"error: {e}" for e in expect]) or (
            not expect and sql.code == 0
        )
        held = (
            ended
            and ok
            and after < before + 32 * MB
            and (not concurrent or "while it ran" in during)
            and left <= 1
        )
        detail = (
            f"{line!r} after {took:.1f} s; {during or 'nothing concurrent'}; daemon RSS "
            f"{before / MB:.0f} MB before, {watch.daemon / MB:.0f} peak, {after / MB:.0f} "
            f"after; worker peak {watch.workers / MB:.0f} MB; daemon answers: {ok}"
        )
        return held, detail

    return trial


TRIALS: list[Trial] = [
    Trial(
        "endless recursive CTE",
        "one endless SQL query wedged the daemon (readers' lock at 100 % CPU)",
        _attack(ENDLESS, "the query ran past its 30 s limit and was stopped"),
    ),
    Trial(
        "UNION ALL of 20,000 arms",
        "a 20,000-arm UNION ALL (43 s) blocked everything while it ran",
        _attack(
            UNION_20K,
            f"the statement is {len(UNION_20K):,} characters long; ocb sql "
            f"parses at most {MAX_CHARS:,}",
            concurrent=False,
        ),
    ),
    Trial(
        f"UNION ALL of {LONGEST:,} arms (the longest statement let through)",
        "a UNION ALL that DuckDB plans for seconds, deaf to interrupts, beside other requests",
        _attack(union(LONGEST)),
    ),
    Trial(
        "24 NOT MATERIALIZED CTEs (planned for ever)",
        "1.7 KB of SQL that DuckDB binds for hours, past any interrupt or memory limit",
        _attack(
            planned_for_ever(),
            "the query ran past its 30 s limit and was stopped",
            "the query needed more than its 1024 MiB of memory and was stopped",
        ),
    ),
    Trial(
        "list of 1.5e9 ranges",
        "one query took the daemon from 157 MB to 5 GB in 5 s",
        _attack(LISTS, "the query needed more than its 1024 MiB of memory and was stopped"),
    ),
]


def main(argv: list[str]) -> None:
    words = [a.lower() for a in argv]
    for t in TRIALS:
        if words and not any(w in t.name.lower() for w in words):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            start = time.monotonic()
            held, detail = t.fn(Path(tmp))
            print(f"{'held' if held else 'FAILED':<7} {t.name} ({time.monotonic() - start:.0f} s)")
            print(f"        {detail}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
