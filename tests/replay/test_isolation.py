"""Queries run in worker processes that can always be abandoned: stopping ends them at
once, a worker whose query DuckDB will not interrupt ends itself, a sound worker serves
the next store, and a store reads a shared log only under what it is told to hold."""

from __future__ import annotations

import io
import pickle
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ocb.brain import Brain
from ocb_events.errors import AnalyticsError
from replay.analytics import AnalyticsStore
from replay.confinement import CONFIG
from replay.history import SLICE, HeldLog, caught_up
from replay.isolation import WORKER, Limits, Running, _Values
from replay.worker import EXIT_TIMEOUT, read_frame, write_frame
from tests.waiting import DEADLINE, wait_for

ENDLESS = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM t) SELECT count(*) FROM t"
LISTS = "SELECT max(length(l)) FROM (SELECT list(range) l FROM range(1500000000))"


def planned_for_ever(k: int = 24) -> str:
    """Short SQL DuckDB binds and plans for hours, deaf to interrupts."""
    ctes = ["a0 AS (SELECT 1 x)"] + [
        f"a{i} AS NOT MATERIALIZED (SELECT * FROM a{i - 1} UNION ALL SELECT * FROM a{i - 1})"
        for i in range(1, k + 1)
    ]
    return "WITH " + ", ".join(ctes) + f" SELECT count(*) FROM a{k}"


@pytest.fixture
def store_path(built: Path) -> Path:
    """The example brain's analytics store, built."""
    with Brain(built, writer=False) as b, caught_up(built, b.log) as store:
        return store.path


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_stopping_ends_a_running_query_and_refuses_new_ones(store_path: Path) -> None:
    running = Running()
    errors: list[AnalyticsError] = []

    def endless() -> None:
        with AnalyticsStore(store_path, running=running, limits=Limits(timeout_s=3600)) as s:
            try:
                s.query(ENDLESS)
            except AnalyticsError as exc:
                errors.append(exc)

    thread = threading.Thread(target=endless)
    thread.start()
    (pid,) = wait_for(running.pids, "the query's worker")
    running.stop()
    thread.join(DEADLINE)
    assert [e.message for e in errors] == ["the query was stopped: the brain is closing"]
    assert not alive(pid) and running.pids() == []
    with AnalyticsStore(store_path, running=running) as s, pytest.raises(AnalyticsError) as err:
        s.query("SELECT 1")
    assert err.value.message == "the query was stopped: the brain is closing"


def test_a_sound_worker_serves_the_next_store_and_one_over_its_memory_does_not(
    store_path: Path,
) -> None:
    running = Running()
    with AnalyticsStore(store_path, running=running) as s:
        assert s.query("SELECT 1 AS one").rows == [(1,)]
        (first,) = running.pids()
    assert running.pids() == [first]  # idle, its store closed
    with AnalyticsStore(store_path, running=running, limits=Limits(memory_mb=64)) as s:
        with pytest.raises(AnalyticsError, match="more than its 64 MiB of memory"):
            s.query(LISTS)
        assert s.query("SELECT 2 AS two").rows == [(2,)]  # on a fresh worker
        (second,) = running.pids()
    assert first != second and not alive(first)
    running.stop()
    assert not alive(second)


def test_a_worker_whose_query_will_not_stop_ends_itself(store_path: Path) -> None:
    """Planning ignores interrupts: with nobody waiting for it, the worker still exits
    a moment after the query's time is up."""
    proc = subprocess.Popen(
        [sys.executable, "-P", str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    write_frame(proc.stdin, {"op": "open", "path": str(store_path), "config": dict(CONFIG),
                             "memory_mb": 8192, "threads": 1})  # fmt: skip
    assert read_frame(proc.stdout) == ("ready",)
    write_frame(proc.stdin, {"op": "query", "sql": planned_for_ever(), "params": None,
                             "timeout_s": 0.5, "max_result_bytes": 1 << 20})  # fmt: skip
    assert proc.wait(DEADLINE) == EXIT_TIMEOUT
    proc.stdin.close()
    proc.stdout.close()


def test_a_result_holds_only_the_types_a_query_returns() -> None:
    safe = pickle.dumps(("rows", [(1, "a", None, 1.5, b"x", [1], {"k": 2})]))
    assert _Values(io.BytesIO(safe)).load()[0] == "rows"
    for bad in (pickle.dumps(("rows", [(Path("/"),)])), pickle.dumps(subprocess.Popen)):
        with pytest.raises(pickle.UnpicklingError, match="pathlib|subprocess"):
            _Values(io.BytesIO(bad)).load()


def test_a_shared_log_is_read_only_under_held_a_slice_at_a_time(built: Path) -> None:
    depth, slices = [0], []

    @contextmanager
    def held() -> Iterator[None]:
        depth[0] += 1
        try:
            yield
        finally:
            depth[0] -= 1

    with Brain(built, writer=False) as b:
        log = b.log

        class Watched:
            """The brain's log, saying whether each read runs under ``held``."""

            last_seq = log.last_seq

            def chain_of(self, seq: int) -> bytes | None:
                assert depth[0] == 1
                return log.chain_of(seq)

            def read(self, a: int = 1, z: int | None = None, *, light: bool = False) -> Iterator:
                assert depth[0] == 1
                recs = list(log.read(a, z, light=light))
                slices.append(len(recs))
                return iter(recs)

        view = HeldLog(Watched(), held, Running())  # type: ignore[arg-type]
        assert [r.seq for r in view.read()] == [r.seq for r in log.read()]
        with AnalyticsStore(built / "a.duckdb") as store:
            assert store.catch_up(view) == log.last_seq
            assert store.query("SELECT count(*) FROM events").rows == [(log.last_seq,)]
    assert slices and max(slices) <= SLICE and depth == [0]
