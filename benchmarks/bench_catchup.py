"""Catch-up benchmark: where the analytics store's catch-up from scratch is bound.

Catches a brain's analytics store up from scratch as shipped, and takes the work apart,
each part in a fresh process, the parts alternating run by run:

* ``catch-up``: ``AnalyticsStore.catch_up`` into an empty file; its CPU split into
  the folding thread, the commit thread (the store's Python side of each flush and
  the DuckDB work it waits for) and DuckDB's own threads (the rest of the process);
* ``fold alone``: the same fold with every commit left out (rows gathered and
  coded, nothing handed to DuckDB): what the folding thread costs with both cores
  free;
* ``DuckDB copy``: every table of the finished store copied into a fresh file
  (``CREATE TABLE AS``, then a checkpoint): what DuckDB itself needs to write
  exactly these rows, with no Python between;
* ``DuckDB read``: every column of every table of the finished store read once.

It then prints the floor those parts set on two cores: the two cores must carry the
fold and DuckDB's copy at least, and a fold on one thread must run whole on one core.

    .venv/bin/python benchmarks/bench_catchup.py                  # builds 100,000 events (pg)
    .venv/bin/python benchmarks/bench_catchup.py --brain DIR      # an existing brain, read only
    .venv/bin/python benchmarks/bench_catchup.py --events 1000000 --runs 3

This is a benchmark, not a test: nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

PARTS = ("catch-up", "fold alone", "DuckDB copy", "DuckDB read")


def _fresh(db: Path) -> None:
    for p in (db, Path(f"{db}.wal")):
        p.unlink(missing_ok=True)


def part_catch_up(brain: Path, db: Path) -> dict[str, float]:
    from ocb.brain import Brain
    from replay.analytics import AnalyticsStore

    commit_cpu = [0.0]

    class Timed(AnalyticsStore):
        def _commit(self, *args: Any) -> None:
            t0 = time.thread_time()
            try:
                super()._commit(*args)
            finally:
                commit_cpu[0] += time.thread_time() - t0

    _fresh(db)
    with Brain(brain, writer=False) as b:
        t0, c0, m0 = time.perf_counter(), time.process_time(), time.thread_time()
        with Timed(db) as store:
            n = store.catch_up(b.log)
        wall, cpu, main = (
            time.perf_counter() - t0,
            time.process_time() - c0,
            time.thread_time() - m0,
        )
    return {
        "records": n,
        "wall": wall,
        "cpu": cpu,
        "fold thread": main,
        "commit thread": commit_cpu[0],
        "DuckDB threads": cpu - main - commit_cpu[0],
        "store MiB": db.stat().st_size / 2**20,
    }


def part_fold_alone(brain: Path, db: Path) -> dict[str, float]:
    """The catch-up's fold with its commits left out (the store's own private steps:
    a benchmark may reach in where no public call stops halfway)."""
    from ocb.brain import Brain
    from replay import analytics
    from replay.analytics import AnalyticsStore

    class FoldOnly(AnalyticsStore):
        def _commit(self, con: Any, batch: Any, *args: Any) -> None:
            self.last_seq = args[-2]

    _fresh(db)
    with Brain(brain, writer=False) as b:
        store = FoldOnly(db)
        try:
            t0, c0 = time.perf_counter(), time.process_time()
            store._hold("exclusive")
            end = b.log.last_seq
            n = store._fold_into(b.log, end, analytics.first_ts_of(b.log), None, None)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        finally:
            store.close()
    _fresh(db)
    return {"records": n, "wall": wall, "cpu": cpu}


def _store_tables(con: Any, catalog: str) -> list[str]:
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND schema_name = "
        "'store' ORDER BY table_name",
        [catalog],
    ).fetchall()
    return [str(r[0]) for r in rows]


def part_duckdb(store_db: Path, db: Path, *, write: bool) -> dict[str, float]:
    import duckdb

    _fresh(db)
    con = duckdb.connect(str(db))
    try:
        con.execute(f"ATTACH '{store_db}' AS done (READ_ONLY)")
        tables = _store_tables(con, "done")
        t0, c0 = time.perf_counter(), time.process_time()
        for t in tables:
            if write:
                con.execute(f"CREATE TABLE {t} AS SELECT * FROM done.store.{t}")
            else:
                cols = con.execute(f"SELECT * FROM done.store.{t} LIMIT 0").description
                every = ", ".join(c[0] for c in cols)
                con.execute(f"SELECT sum(hash({every})) FROM done.store.{t}").fetchall()
        if write:
            con.execute("CHECKPOINT")
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        con.close()
    _fresh(db)
    return {"wall": wall, "cpu": cpu}


def child(part: str, brain: Path, store_db: Path, scratch: Path) -> dict[str, float]:
    if part == "catch-up":
        return part_catch_up(brain, store_db)
    if part == "fold alone":
        return part_fold_alone(brain, scratch)
    return part_duckdb(store_db, scratch, write=part == "DuckDB copy")


def run_part(part: str, brain: Path, store_db: Path, scratch: Path) -> dict[str, float]:
    argv = [sys.executable, __file__, "--child", part, "--brain", str(brain)]
    argv += ["--store", str(store_db), "--scratch", str(scratch)]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def build_brain(work: Path, events: int) -> Path:
    import bench_history

    brain, _, _ = bench_history.build(work, events, events < 1_000_000, "pg")
    return brain


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def report(got: dict[str, list[dict[str, float]]]) -> None:
    import bench_core

    print(json.dumps(bench_core.machine()))
    catch, fold = got["catch-up"], got["fold alone"]
    copy, read = got["DuckDB copy"], got["DuckDB read"]
    print(f"\n{int(catch[0]['records']):,} records, store {median(catch, 'store MiB'):.0f} MiB")
    print(f"medians of {len(catch)} runs, each part in a fresh process\n")
    print("| part | wall, s | CPU, s |")
    print("|---|---:|---:|")
    print(f"| catch-up from scratch, as shipped | {median(catch, 'wall'):.2f} | "
          f"{median(catch, 'cpu'):.2f} |")  # fmt: skip
    for k in ("fold thread", "commit thread", "DuckDB threads"):
        print(f"| - its {k} | | {median(catch, k):.2f} |")
    print(f"| fold alone (no commit) | {median(fold, 'wall'):.2f} | {median(fold, 'cpu'):.2f} |")
    print(f"| DuckDB copy of the finished store | {median(copy, 'wall'):.2f} | "
          f"{median(copy, 'cpu'):.2f} |")  # fmt: skip
    print(f"| DuckDB read of every column | {median(read, 'wall'):.2f} | "
          f"{median(read, 'cpu'):.2f} |")  # fmt: skip
    alone, written = median(fold, "cpu"), median(copy, "cpu")
    print(
        f"\nfloor on two cores, the fold on one thread: {max(alone, (alone + written) / 2):.2f} s"
    )
    print(f"floor on two cores, the fold split over both: {(alone + written) / 2:.2f} s")
    shipped_duck = median(catch, "commit thread") + median(catch, "DuckDB threads")
    print(f"DuckDB's side as shipped against its copy: {shipped_duck:.2f} / {written:.2f} CPU s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--brain", type=Path, help="an existing brain (its log is only read)")
    ap.add_argument("--events", type=int, default=100_000, help="without --brain: pg mix")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--child", choices=PARTS, help=argparse.SUPPRESS)
    ap.add_argument("--store", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.brain, args.store, args.scratch)))
        return 0
    work = Path(tempfile.mkdtemp(prefix="ocb-bench-catchup-"))
    try:
        brain = args.brain.resolve() if args.brain else build_brain(work, args.events)
        store_db, scratch = work / "analytics.duckdb", work / "scratch.duckdb"
        got: dict[str, list[dict[str, float]]] = {p: [] for p in PARTS}
        for i in range(args.runs):
            for part in PARTS:
                got[part].append(run_part(part, brain, store_db, scratch))
                print(f"run {i + 1}: {part} {got[part][-1]['wall']:.2f} s", flush=True)
        report(got)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
