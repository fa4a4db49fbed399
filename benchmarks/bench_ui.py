"""Window benchmark: ``ocb ui`` on a brain of 10,000 chunks and 1,000,000 events, measured
in a real headless Chromium.

Builds the brain of ``bench_history.py`` (the ``pg`` mix by default: every outcome
changes edge weights, the heaviest history to show), writes its snapshots and catches
its analytics store up (both are what a brain that lived that long has; their times are
printed apart), then starts ``ocb ui`` on it and, in the browser, loads each page
``--repeat`` times in a fresh tab: its first render is the time from the start of the
navigation to the page's data drawn (``main[data-ready]``); then asks ``--queries``
questions on the Ask page: the round trip is from Enter to the answer and its walk
drawn; then times the two reads a page asks for after its first render (the Health
page's checks, a full rebuild; the Memory page's confidence moves, a read of the whole
log). Prints machine facts and a Markdown table (medians, p95), writes JSON to ``--out``.

    .venv/bin/python benchmarks/bench_ui.py                   # 1M events, ~10 min
    .venv/bin/python benchmarks/bench_ui.py --quick           # 100,000 events on 1,000 chunks
    .venv/bin/python benchmarks/bench_ui.py --brain DIR       # a brain built before (--keep)

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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import bench_core  # noqa: E402
import bench_history  # noqa: E402

from ocb.brain import Brain  # noqa: E402
from tests.ocb.ui.window import LAUNCH_ARGS, chromium, window  # noqa: E402

PAGES = ("ask", "history", "why", "memory", "health")


def p95(xs: list[float]) -> float:
    return sorted(xs)[max(0, int(round(0.95 * len(xs))) - 1)]


def prepare(brain: Path, every: int) -> dict[str, float]:
    """Snapshots and the analytics store, as a brain that lived that long has them."""
    from replay.analytics import AnalyticsStore

    out: dict[str, float] = {}
    if not (brain / "snapshots").is_dir() or not any((brain / "snapshots").iterdir()):
        t0 = time.perf_counter()
        bench_history.write_checkpoints(brain, every)
        out["snapshots_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with Brain(brain, writer=False) as b, AnalyticsStore(brain / "cache" / "analytics.duckdb") as s:
        s.catch_up(b.log)
    out["analytics_s"] = time.perf_counter() - t0
    return out


def questions(brain: Path, n: int) -> list[str]:
    seen: list[str] = []
    with Brain(brain, writer=False) as b:
        for r in b.events(types=["query_traced"], limit=5000):
            q = r.event.query  # type: ignore[attr-defined]
            if q not in seen:
                seen.append(q)
            if len(seen) >= n:
                break
    return seen


def an_edge(brain: Path) -> tuple[str, str]:
    """An edge some outcome changed (the Why page's subject)."""
    with Brain(brain, writer=False) as b:
        for r in b.events(types=["edges_updated"], limit=5000):
            for u in r.event.updates:  # type: ignore[attr-defined]
                return str(u.source), str(u.targets[0])
    return "", ""


def measure(brain: Path, repeat: int, n_queries: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    texts = questions(brain, n_queries)
    source, target = an_edge(brain)
    out: dict[str, Any] = {"pages": {}}
    with window(brain) as w, sync_playwright() as p:
        t0 = time.perf_counter()
        w.api("/api/history")  # the first History of a process opens the store
        out["warm_history_ms"] = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        w.api(
            "/api/moves", timeout=600
        )  # the Memory page's confidence moves: the first reads the log
        out["moves_first_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        w.api(
            "/api/doctor", timeout=1800
        )  # the Health page's checks, run on demand (a full rebuild)
        out["doctor_s"] = time.perf_counter() - t0
        browser = p.chromium.launch(executable_path=chromium(), args=LAUNCH_ARGS)
        ctx = browser.new_context()
        q = f"q={texts[0]}&" if texts else ""
        why = f"source={source}&target={target}&" if source else ""
        urls = {"ask": f"/ask?{q}", "history": "/history?", "why": f"/why?{why}",
                "memory": "/memory?", "health": "/health?"}  # fmt: skip
        for name in PAGES:
            times = []
            for _ in range(repeat):
                page = ctx.new_page()
                page.goto(f"{w.base}{urls[name]}token={w.token}")
                page.wait_for_selector(f"main[data-ready='{name}']", timeout=120_000)
                times.append(
                    page.evaluate("Number(document.querySelector('main').dataset.readyAt)")
                )
                page.close()
            out["pages"][name] = {"median_ms": statistics.median(times), "p95_ms": p95(times),
                                  "runs": times}  # fmt: skip
        page = ctx.new_page()
        page.goto(f"{w.base}/ask?token={w.token}")
        page.wait_for_selector("main[data-ready='ask']")
        trips = []
        for text in texts:
            renders = int(page.evaluate("Number(document.querySelector('main').dataset.renders)"))
            page.get_by_label("Question").fill(text)
            t0 = time.perf_counter()
            page.get_by_label("Question").press("Enter")
            done = (f"Number(document.querySelector('main').dataset.renders) > {renders}"
                    " && document.querySelector('svg.walk') !== null")  # fmt: skip
            while not page.evaluate(done):  # (the page's policy forbids wait_for_function's eval)
                time.sleep(0.002)
            trips.append((time.perf_counter() - t0) * 1000)
        out["query_round_trip"] = {"median_ms": statistics.median(trips), "p95_ms": p95(trips),
                                   "n": len(trips)}  # fmt: skip
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--quick", action="store_true", help="100,000 events on 1,000 chunks")
    ap.add_argument("--rule", default="pg", help="the mix (bench_history.py): pg or route")
    ap.add_argument("--brain", type=Path, help="measure this brain (built before with --keep)")
    ap.add_argument("--keep", type=Path, help="build into this directory and keep it")
    ap.add_argument("--repeat", type=int, default=5, help="loads of each page")
    ap.add_argument("--queries", type=int, default=20, help="questions asked on the Ask page")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "ui.json")
    args = ap.parse_args()
    events = 100_000 if args.quick else args.events
    res: dict[str, Any] = {"machine": bench_core.machine()}
    print("machine: " + ", ".join(f"{k}={v}" for k, v in res["machine"].items()), flush=True)
    work = None
    if args.brain is not None:
        brain = args.brain
    else:
        work = args.keep or Path(tempfile.mkdtemp(prefix="ocb-ui-"))
        t0 = time.perf_counter()
        brain, _, _ = bench_history.build(work, events, args.quick, args.rule)
        res["build_s"] = time.perf_counter() - t0
        print(f"built {events:,} events in {res['build_s']:.0f} s", flush=True)
    try:
        with Brain(brain, writer=False) as b:
            res["events"], res["chunks"] = b.log.last_seq, len(b.graph.nodes)
        res |= prepare(brain, 10_000)
        res |= measure(brain, args.repeat, args.queries)
    finally:
        if work is not None and args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n| {res['events']:,} events, {res['chunks']:,} chunks | median | p95 | target |")
    print("|---|---:|---:|---|")
    for name in PAGES:
        got = res["pages"][name]
        print(f"| first render of {name.title()}, ms | {got['median_ms']:.0f} | "
              f"{got['p95_ms']:.0f} | < 1000 |")  # fmt: skip
    trip = res["query_round_trip"]
    print(f"| query round trip in the page, ms ({trip['n']} questions) | "
          f"{trip['median_ms']:.0f} | {trip['p95_ms']:.0f} | < 100 |")  # fmt: skip
    print(f"| the Health page's checks (ocb doctor, on demand), s | {res['doctor_s']:.1f} | | |")
    print(f"| the Memory page's confidence moves, first read of the log, s | "
          f"{res['moves_first_s']:.1f} | | |")  # fmt: skip
    print(f"\nbefore the window: snapshots {res.get('snapshots_s', 0):.0f} s, analytics "
          f"catch-up {res['analytics_s']:.1f} s; first History of the window process "
          f"{res['warm_history_ms']:.0f} ms")  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
