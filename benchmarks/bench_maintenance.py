"""Maintenance benchmark: each ``ocb maintain`` operation on a 10,000-chunk brain.

Builds the synthetic workspace of ``bench_core.py`` (1,000 files x 10 sections), adds
exact copies of 20 of its files (near-duplicates for merge) and 20 one-line files with
words of their own (nodes without edges, for connect), indexes it, then asks 200
queries plus each query about a copied file three times (co-firing traces for merge)
and learns from every trace. Each operation then runs on a fresh copy of that brain,
``--runs`` times, dry and recorded, through the Python API (projections loaded
before the clock starts; recorded runs include the fsync). The decision's time is 30
days after the brain's first record, so decay has a full half-life to apply. Split
runs with ``split_over_chars=400, split_chars=200`` (the synthetic sections are
300-500 characters, none over the default 2,000) and prune with ``prune_below=0.12``
(nothing here is below the default 0.02). Prints machine facts and a Markdown table
(medians); writes JSON to ``--out``.

    .venv/bin/python benchmarks/bench_maintenance.py            # ~3 min
    .venv/bin/python benchmarks/bench_maintenance.py --quick    # 1,000 chunks

This is a benchmark, not a test: nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_core import machine, make_workspace

from ocb.brain import Brain
from ocb.upkeep.maintain import OPS, maintain
from ocb_events.clock import TickClock

HERE = Path(__file__).resolve().parent
DAY = 86_400 * 10**9
OVERRIDES: dict[str, dict[str, Any]] = {
    "split": {"split_over_chars": 400, "split_chars": 200},
    "prune": {"prune_below": 0.12},
}
COPIES = 20
LONELY = 20


def extend_workspace(ws: Path, queries: list[dict[str, str]]) -> list[str]:
    """Copy the files of the first queries (duplicates) and add one-line files; return
    the queries about copied files."""
    copied: list[str] = []
    for q in queries:
        if len(copied) == COPIES:
            break
        if q["file"] not in copied:
            copied.append(q["file"])
            (ws / "copies" / q["file"]).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ws / q["file"], ws / "copies" / q["file"])
    for i in range(LONELY):
        (ws / "misc").mkdir(exist_ok=True)
        (ws / "misc" / f"lonely-{i:02d}.md").write_text(f"zq{i}x wv{i}y kj{i}p\n")
    return [q["text"] for q in queries if q["file"] in copied]


def build(ws: Path, brain_dir: Path, queries: list[dict[str, str]], dup: list[str]) -> dict:
    t0 = time.perf_counter()
    with Brain.create(brain_dir) as b:
        report = b.sync(ws)
        traces = [b.query(q["text"]).trace_id for q in queries]
        traces += [b.query(text).trace_id for text in dup for _ in range(3)]
        for i, tid in enumerate(traces):
            b.learn(1.0 if i % 3 else -1.0, trace_id=tid)
        events = b.log.last_seq
    return {
        "nodes": report.nodes,
        "edges": report.edges,
        "traces": len(traces),
        "events": events,
        "build_s": time.perf_counter() - t0,
    }


def run_once(base: Path, work: Path, ops: list[str], dry: bool) -> dict[str, Any]:
    """One maintenance run on a fresh copy of ``base``: its time and report."""
    brain_dir = work / "run"
    shutil.rmtree(brain_dir, ignore_errors=True)
    shutil.copytree(base, brain_dir)
    t0 = time.perf_counter()
    b = Brain(brain_dir, writer=not dry)
    b.store.load("config", "graph", "traces", "vectors")
    b.store.embedder()
    first = next(iter(b.log.read(1, 1))).ts
    clock = TickClock(start_ns=first + 30 * DAY, step_ns=0)
    loaded = time.perf_counter()
    opts = {k: v for op in ops for k, v in OVERRIDES.get(op, {}).items()}
    report = maintain(b.store, ops, dry_run=dry, clock=clock, **opts)
    done = time.perf_counter()
    b.close()
    return {
        "load_s": loaded - t0,
        "op_s": done - loaded,
        "events": report.events,
        "counts": {o.op: o.counts for o in report.ops},
    }


def bench(base: Path, work: Path, runs: int) -> list[dict[str, Any]]:
    rows = []
    for ops in [[op] for op in OPS] + [list(OPS)]:
        label = ops[0] if len(ops) == 1 else "all six"
        print(f"{label} ...", flush=True)
        rec = [run_once(base, work, ops, dry=False) for _ in range(runs)]
        dry = [run_once(base, work, ops, dry=True) for _ in range(runs)]
        rows.append(
            {
                "ops": label,
                "params": {k: v for op in ops for k, v in OVERRIDES.get(op, {}).items()},
                "recorded_ms": statistics.median(r["op_s"] for r in rec) * 1000,
                "dry_run_ms": statistics.median(r["op_s"] for r in dry) * 1000,
                "load_ms": statistics.median(r["load_s"] for r in rec) * 1000,
                "events": rec[0]["events"],
                "counts": rec[0]["counts"],
                "runs": runs,
            }
        )
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| operation | recorded, ms | dry run, ms | events | what it changed |",
        "|---|---:|---:|---:|---|",
    ]
    for r in rows:
        what = "; ".join(
            f"{op}: " + ", ".join(f"{k} {v:,}" for k, v in c.items())
            for op, c in r["counts"].items()
        )
        lines.append(
            f"| {r['ops']} | {r['recorded_ms']:,.0f} | {r['dry_run_ms']:,.0f} | "
            f"{r['events']:,} | {what} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="1,000 chunks (smoke run)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "maintenance.json")
    args = ap.parse_args()
    n_files, n_queries = (100, 50) if args.quick else (1000, 200)
    work = Path(tempfile.mkdtemp(prefix="ocb-bench-maint-"))
    res: dict[str, Any] = {"machine": machine(), "quick": args.quick, "runs": args.runs}
    print("machine: " + ", ".join(f"{k}={v}" for k, v in res["machine"].items()), flush=True)
    try:
        ws = work / "workspace"
        ws.mkdir()
        queries = make_workspace(ws, n_files, n_queries, args.seed)
        dup = extend_workspace(ws, queries)
        print("building the brain ...", flush=True)
        res["brain"] = build(ws, work / "base", queries, dup)
        print("brain: " + ", ".join(f"{k}={v}" for k, v in res["brain"].items()), flush=True)
        res["rows"] = bench(work / "base", work, args.runs)
    finally:
        shutil.rmtree(work)
    lo = res["rows"][0]["load_ms"]
    print(f"\nopening the brain and loading its projections (not timed below): {lo:,.0f} ms")
    print("\n" + table(res["rows"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2, default=str) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    sys.exit(main())
