"""History benchmark: a brain with 1,000,000 events; rebuild, time travel, audit, SQL.

Builds the 10,000-chunk synthetic workspace of ``bench_core.py``, indexes it, records
200 real queries with outcomes through the API, then grows the log to ``--events``
with copies of those (trace, outcome, update) triples, two traces per outcome, in
appends of 1,000 (timed: those that seal a full segment store it compressed). It
does so for each mix of ``--rules``: ``pg`` (each outcome changes edge weights: what
time travel and the edge audit read) and ``route``, the default rule (each outcome
updates a route: the daily-use mix). It
writes snapshots every ``--every`` records (as a brain that lived that long would
have), then measures, medians over repeats: a full rebuild (as shipped, and in one process:
``rebuild`` folds the graph in a second process on a long log and two cores);
``as-of`` to random points
(loading every projection from the nearest checkpoint plus the tail); the analytics
store's catch-up from scratch and after 10,000 new records; a GROUP BY over all
traces; the audit of one much-changed edge; and the export of every view as Parquet
partitioned by day (``ocb export --parquet``). Prints machine facts and a Markdown
table, writes JSON to ``--out``.

    .venv/bin/python benchmarks/bench_history.py               # ~17 min, ~2 GB in /tmp
    .venv/bin/python benchmarks/bench_history.py --quick       # 100,000 events
    .venv/bin/python benchmarks/bench_history.py --rules route # the daily-use mix only

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


def rebuild_ms(log: SegmentLog, runs: int) -> tuple[float, float]:
    """Median ms of a rebuild as shipped (two processes on a long log and two cores)
    and of one in one process, alternated so both see the same machine."""
    default, one = [], []
    for _ in range(runs):
        default.append(median_ms(lambda: rebuild(log), 1)[0])
        one.append(median_ms(lambda: rebuild(log, split=False), 1)[0])
    return statistics.median(default), statistics.median(one)


def build(
    work: Path, events: int, quick: bool, rule: str
) -> tuple[Path, list[str], dict[str, list[float]]]:
    """A brain directory whose log holds ``events`` records, and its query texts: its
    outcomes learn with ``rule``: ``pg`` changes edge weights (what time travel and
    audit read), the default ``route`` learns routes (the daily-use mix)."""
    ws = work / "workspace"
    queries = bench_core.make_workspace(ws, 100 if quick else 1000, 200, seed=7)
    seed_brain = work / "seed"
    brain, _ = Brain.init(seed_brain, ws, durability="none")
    with brain as b:
        for i, q in enumerate(queries):
            b.learn(1.0 if i % 4 else -1.0, trace_id=b.query(q["text"]).trace_id, rule=rule)
        done = b.log.last_seq
    dest = work / f"brain-{rule}"
    appends = bench_core.grow_log(seed_brain, dest, events - done, traces_per_outcome=2)
    shutil.rmtree(seed_brain)
    shutil.rmtree(dest / "snapshots", ignore_errors=True)
    shutil.rmtree(dest / "cache", ignore_errors=True)
    return dest, [q["text"] for q in queries], appends


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
            out |= bench_export(store.path, brain, b)
            if not counts:  # a mix that changes no edge (routes learn instead)
                return out
            for name, (src, dst, n) in (
                ("typical", counts[len(counts) // 2]),
                ("hottest", counts[-1]),
            ):
                out[f"audit_{name}_changes"] = n
                out[f"audit_{name}_ms"], _ = median_ms(
                    lambda s=src, d=dst: audit_edge(store, s, d), runs
                )
    return out


def bench_export(db: Path, brain: Path, b: Brain) -> dict[str, Any]:
    """Every view written as Parquet partitioned by day (``ocb export --parquet``), once."""
    from replay.parquet import brain_id, export_parquet

    dest = brain.parent / "export"
    t0 = time.perf_counter()
    got = export_parquet(db, dest, brain_id=brain_id(b.log), brain=brain.name)
    out = {"export_s": time.perf_counter() - t0, "export_mib": got.bytes / 2**20}
    out["export_files"] = sum(v.files for v in got.views)
    shutil.rmtree(dest)
    return out


def run_mix(work: Path, events: int, quick: bool, rule: str, every: int) -> dict[str, Any]:
    """Build the mix learned with ``rule`` and measure it; its files are removed after."""
    runs = 3
    res: dict[str, Any] = {"rule": rule}
    try:
        t0 = time.perf_counter()
        brain, texts, appends = build(work, events, quick, rule)
        res["build_s"] = time.perf_counter() - t0
        sealed, plain = appends["sealed"], appends["plain"]
        res["seals"] = len(sealed)
        res["append_sealing_s"] = statistics.median(sealed) if sealed else None
        res["append_sealing_max_s"] = max(sealed) if sealed else None
        res["append_plain_s"] = statistics.median(plain) if plain else None
        log_bytes = sum(p.stat().st_size for p in (brain / "log").glob("*.seg"))
        res["log_mib"] = log_bytes / 2**20
        res["bytes_per_event"] = log_bytes / events
        print(f"{rule}: built {events:,} events in {res['build_s']:.0f} s", flush=True)
        t0 = time.perf_counter()
        res["snapshots"] = write_checkpoints(brain, every)
        res["checkpoint_s"] = time.perf_counter() - t0
        with SegmentLog(brain / "log", writer=False) as log:
            res["rebuild_ms"], res["rebuild_one_ms"] = rebuild_ms(log, runs)
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
    return res


def table(mixes: list[dict[str, Any]]) -> list[tuple[str, list[float | None], str]]:
    """The rows of the printed table: a metric, its value in each mix, its target."""

    def col(get: Callable[[dict[str, Any]], Any]) -> list[float | None]:
        return [get(m) for m in mixes]

    def an(key: str) -> Callable[[dict[str, Any]], Any]:
        return lambda m: m["analytics"].get(key)

    return [
        ("full rebuild, s", col(lambda m: m["rebuild_ms"] / 1000), "<= 5"),
        ("rebuild, events/s", col(lambda m: m["rebuild_eps"]), ""),
        ("full rebuild in one process, s", col(lambda m: m["rebuild_one_ms"] / 1000), ""),
        ("as-of query at a random point, ms (median of 20)", col(lambda m: m["as_of_ms"]), ""),
        ("as-of query p95, ms", col(lambda m: m["as_of_p95_ms"]), ""),
        ("as-of load of every projection, ms", col(lambda m: m["as_of_load_all_ms"]), ""),
        ("as-of load of every projection p95, ms", col(lambda m: m["as_of_load_all_p95_ms"]), ""),
        ("edge changes of the typical audited edge", col(an("audit_typical_changes")), ""),
        ("audit of a typical edge, ms", col(an("audit_typical_ms")), "<= 50"),
        ("edge changes of the most-changed edge", col(an("audit_hottest_changes")), ""),
        ("audit of the most-changed edge, ms", col(an("audit_hottest_ms")), ""),
        ("GROUP BY over all traces, ms", col(an("group_by_traces_ms")), "<= 1000"),
        ("analytics catch-up from scratch, s", col(an("catch_up_scratch_s")), "<= 15"),
        ("analytics catch-up, 10,000 new events, ms", col(an("catch_up_10k_ms")), ""),
        ("log bytes per event", col(lambda m: m["bytes_per_event"]), "<= 500"),
        ("segments sealed while growing the log", col(lambda m: m["seals"]), ""),
        ("append of 1,000 events sealing a segment, s", col(lambda m: m["append_sealing_s"]), ""),
        ("the slowest such append, s", col(lambda m: m["append_sealing_max_s"]), ""),
        ("any other append of 1,000 events, s", col(lambda m: m["append_plain_s"]), ""),
        ("log size, MiB", col(lambda m: m["log_mib"]), ""),
        ("analytics store, MiB", col(an("store_mib")), ""),
        ("Parquet export of every view, s", col(an("export_s")), ""),
        ("Parquet export, MiB", col(an("export_mib")), ""),
        ("Parquet export, files", col(an("export_files")), ""),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--every", type=int, default=10_000, help="records between snapshots")
    ap.add_argument("--quick", action="store_true", help="100,000 events on 1,000 chunks")
    ap.add_argument(
        "--rules",
        default="pg,route",
        help="the mixes, by the rule their outcomes learn with: pg (edge weight changes) "
        "and route (the default rule: the daily-use mix)",
    )
    ap.add_argument("--out", type=Path, default=HERE / "results" / "history.json")
    args = ap.parse_args()
    events = 100_000 if args.quick else args.events
    rules = [r.strip() for r in args.rules.split(",") if r.strip()]
    res: dict[str, Any] = {"machine": bench_core.machine(), "events": events, "every": args.every}
    print("machine: " + ", ".join(f"{k}={v}" for k, v in res["machine"].items()), flush=True)
    res["mixes"] = [
        run_mix(Path(tempfile.mkdtemp(prefix="ocb-history-")), events, args.quick, r, args.every)
        for r in rules
    ]
    print(f"\n| metric ({events:,} events) | " + " | ".join(rules) + " | target |")
    print("|---|" + "---:|" * len(rules) + "---|")
    for name, values, target in table(res["mixes"]):
        shown = ["-" if v is None else (f"{v:,.0f}" if v >= 100 else f"{v:.3g}") for v in values]
        print(f"| {name} | " + " | ".join(shown) + f" | {target} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
