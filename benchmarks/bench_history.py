"""History benchmark: a brain with 1,000,000 events; rebuild, time travel, audit, SQL.

Builds the 10,000-chunk synthetic workspace of ``bench_core.py``, indexes it, records
200 real queries with outcomes through the API, then grows the log to ``--events``
with copies of those (trace, outcome, update) triples, two traces per outcome. It
writes snapshots every ``--every`` records (as a brain that lived that long would
have), then measures, medians over repeats: a full rebuild; ``as-of`` to random points
(loading every projection from the nearest checkpoint plus the tail); the analytics
store's catch-up from scratch and after 10,000 new records; a GROUP BY over all
traces; and the audit of one much-changed edge. Prints machine facts and a Markdown
table, writes JSON to ``--out``.

    .venv/bin/python benchmarks/bench_history.py               # ~10 min, ~2.5 GB in /tmp
    .venv/bin/python benchmarks/bench_history.py --quick       # 100,000 events

This is a benchmark, not a test: nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_core  # noqa: E402

from ocb.brain import Brain  # noqa: E402
from ocb_events.log import SegmentLog  # noqa: E402
from replay import PROJECTIONS, SnapshotStore, fold, load_states, rebuild  # noqa: E402


def median_ms(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times, last = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        last = fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), last


def build(work: Path, events: int, quick: bool) -> tuple[Path, list[str]]:
    """A brain directory whose log holds ``events`` records, and its query texts: its
    outcomes learn with ``pg`` (edge weight changes, what time travel and audit read)."""
    ws = work / "workspace"
    queries = bench_core.make_workspace(ws, 100 if quick else 1000, 200, seed=7)
    seed_brain = work / "seed"
    brain, _ = Brain.init(seed_brain, ws, durability="none")
    with brain as b:
        for i, q in enumerate(queries):
            b.learn(1.0 if i % 4 else -1.0, trace_id=b.query(q["text"]).trace_id, rule="pg")
        done = b.log.last_seq
    dest = work / "brain"
    bench_core.grow_log(seed_brain, dest, events - done, traces_per_outcome=2)
    shutil.rmtree(seed_brain)
    shutil.rmtree(dest / "snapshots", ignore_errors=True)
    shutil.rmtree(dest / "cache", ignore_errors=True)
    return dest, [q["text"] for q in queries]


def write_checkpoints(brain: Path, every: int) -> int:
    """Snapshots of every projection at each multiple of ``every`` (one fold pass)."""
    log = SegmentLog(brain / "log", writer=False)
    store = SnapshotStore(brain / "snapshots")
    states = {n: PROJECTIONS[n].initial() for n in PROJECTIONS}
    written = 0
    for start in range(1, log.last_seq + 1, every):
        end = min(start + every - 1, log.last_seq)
        fold(log.read(start, end, light=True), states)
        for name, state in states.items():
            chain = log.chain_of(end)
            assert chain is not None
            store.save(
                name, end, PROJECTIONS[name].snapshot(state), chain=chain, checkpoint_every=every
            )
            written += 1
    log.close()
    return written


def bench_analytics(brain: Path, runs: int) -> dict[str, Any]:
    """Catch-up from scratch and incremental, a GROUP BY, and an edge audit."""
    from replay.analytics import AnalyticsStore
    from replay.audit import audit_edge

    out: dict[str, Any] = {}
    db = brain / "cache" / "analytics.duckdb"
    with Brain(brain, writer=False) as b:
        last = b.log.last_seq
        t0 = time.perf_counter()
        with AnalyticsStore(db) as store:
            store.catch_up(b.log, to_seq=last - 10_000)
            out["catch_up_scratch_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            store.catch_up(b.log)
            out["catch_up_10k_ms"] = (time.perf_counter() - t0) * 1000
            sql = (
                "SELECT date_trunc('day', ts) d, count(*), avg(context_chars) "
                "FROM traces GROUP BY d"
            )
            out["group_by_traces_ms"], _ = median_ms(lambda: store.query(sql), runs)
            counts = store.query(
                "SELECT source, target, count(*) n FROM deltas WHERE target <> '<STOP>' "
                "GROUP BY 1, 2 HAVING n > 1 ORDER BY n, source, target"
            ).rows
            out["store_mib"] = store.size_bytes / 2**20
            for name, (src, dst, n) in (
                ("typical", counts[len(counts) // 2]),
                ("hottest", counts[-1]),
            ):
                out[f"audit_{name}_changes"] = n
                out[f"audit_{name}_ms"], _ = median_ms(
                    lambda s=src, d=dst: audit_edge(store, s, d), runs
                )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--every", type=int, default=10_000, help="records between snapshots")
    ap.add_argument("--quick", action="store_true", help="100,000 events on 1,000 chunks")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "history.json")
    args = ap.parse_args()
    events = 100_000 if args.quick else args.events
    runs = 3
    work = Path(tempfile.mkdtemp(prefix="ocb-history-"))
    res: dict[str, Any] = {"machine": bench_core.machine(), "events": events, "every": args.every}
    print("machine: " + ", ".join(f"{k}={v}" for k, v in res["machine"].items()), flush=True)
    try:
        t0 = time.perf_counter()
        brain, texts = build(work, events, args.quick)
        res["build_s"] = time.perf_counter() - t0
        log_bytes = sum(p.stat().st_size for p in (brain / "log").glob("*.seg"))
        res["log_mib"] = log_bytes / 2**20
        res["bytes_per_event"] = log_bytes / events
        print(f"built {events:,} events in {res['build_s']:.0f} s", flush=True)
        t0 = time.perf_counter()
        res["snapshots"] = write_checkpoints(brain, args.every)
        res["checkpoint_s"] = time.perf_counter() - t0
        with SegmentLog(brain / "log", writer=False) as log:
            res["rebuild_ms"], _ = median_ms(lambda: rebuild(log), runs)
            store = SnapshotStore(brain / "snapshots")
            rng = random.Random(1)
            points = [rng.randint(1, log.last_seq) for _ in range(20)]
            times = []
            for p in points:
                t0 = time.perf_counter()
                load_states(log, store, sorted(PROJECTIONS), to_seq=p)
                times.append((time.perf_counter() - t0) * 1000)
            res["as_of_load_all_ms"] = statistics.median(times)
            res["as_of_load_all_p95_ms"] = sorted(times)[int(0.95 * len(times)) - 1]
        with Brain(brain, writer=False) as b:  # the search cache, as a live brain has it
            b.query(texts[0], record=False)
        times = []
        for i, p in enumerate(points):
            t0 = time.perf_counter()
            with Brain(brain, writer=False, as_of=p) as b:
                b.query(texts[i % len(texts)], record=False)
            times.append((time.perf_counter() - t0) * 1000)
        res["as_of_ms"] = statistics.median(times)
        res["as_of_p95_ms"] = sorted(times)[int(0.95 * len(times)) - 1]
        res["analytics"] = bench_analytics(brain, runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    res["rebuild_eps"] = events / (res["rebuild_ms"] / 1000)
    a = res["analytics"]
    rows = [
        ("full rebuild, s", res["rebuild_ms"] / 1000, "<= 10"),
        ("rebuild, events/s", res["rebuild_eps"], ""),
        ("as-of query at a random point, ms (median of 20)", res["as_of_ms"], "<= 200"),
        ("as-of query p95, ms", res["as_of_p95_ms"], ""),
        ("as-of load of every projection, ms", res["as_of_load_all_ms"], ""),
        ("as-of load of every projection p95, ms", res["as_of_load_all_p95_ms"], ""),
        (
            f"audit of a typical edge ({a['audit_typical_changes']} changes), ms",
            a["audit_typical_ms"],
            "<= 200",
        ),
        (
            f"audit of the most-changed edge ({a['audit_hottest_changes']:,} changes), ms",
            a["audit_hottest_ms"],
            "",
        ),
        ("GROUP BY over all traces, ms", a["group_by_traces_ms"], "<= 1000"),
        ("analytics catch-up from scratch, s", a["catch_up_scratch_s"], ""),
        ("analytics catch-up, 10,000 new events, ms", a["catch_up_10k_ms"], ""),
        ("log bytes per event", res["bytes_per_event"], ""),
        ("log size, MiB", res["log_mib"], ""),
        ("analytics store, MiB", a["store_mib"], ""),
    ]
    print("\n| metric | value | target |\n|---|---:|---|")
    for name, value, target in rows:
        shown = "-" if value is None else (f"{value:,.0f}" if value >= 100 else f"{value:.3g}")
        print(f"| {name} | {shown} | {target} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
