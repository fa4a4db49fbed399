"""Typed-memory recall latency at 10,000 facts, in process.

Generates a deterministic synthetic workspace (seeded numpy RNG): ``--days`` daily logs
``memory/YYYY-MM-DD.md`` with ``--per-day`` Retain bullets each (10,000 facts by
default), kinds mixed (W 40 %, B 35 %, O 15 % with a confidence, S 10 %; one in ten with
an explicit salience), 1-3 @entities per fact drawn from a Zipf-like pool of 500
entities (so a few are hubs), content from a 3,000-word vocabulary (Zipf-like as well).
Queries: ``--queries`` generated questions, a third words only, a third an entity
name plus words, a third an entity alone ("what about @name").

Measured, with ``time.perf_counter_ns`` around ``brain.recall(q)`` (k=10, the default
character budget), in one process, after ``Brain.init``:

    Brain.init                  scan, chunk, embed and record the workspace and its facts
    first recall (index build)  a freshly opened brain's first recall: loads the
                                projections it needs, then builds the fact index (median of
                                --opens fresh opens; the load alone is reported as well)
    recall depth 2 / depth 0    every query, record=True (the real path: the trace is
                                appended to the log with the brain's durability and folded)
                                and record=False; the cases take turns query by query, so
                                host drift hits them alike

Durability of the recorded cases: ``"batch"`` (the default of ``Brain``: fsync every
append); ``--durability none`` for comparison. Prints machine facts and a Markdown table,
writes JSON to ``--out``. ~1-2 min.

    .venv/bin/python benchmarks/bench_recall.py
    .venv/bin/python benchmarks/bench_recall.py --profile depth2   # + cProfile of one case

This is a benchmark, not a test: nothing here asserts timings.
"""

from __future__ import annotations

import os

# The product keeps OpenBLAS single-threaded (ocb/__init__.py), but only if numpy is not
# imported first; this script imports numpy before ocb, so it sets the same here.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import cProfile  # noqa: E402
import datetime as dt  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import pstats  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_core  # noqa: E402  (machine facts, python loop speed)

from ocb.brain import Brain  # noqa: E402
from ocb_events.clock import TickClock  # noqa: E402

DAY_NS = 86_400 * 10**9
FIRST_DAY = dt.date(2026, 1, 1)
SYLLABLES = (
    "ba be bi bo bu da de di do du ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no "
    "nu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo vu za ze zi zo zu"
).split()
KINDS = np.array(["W", "B", "O", "S"])
KIND_P = np.array([0.40, 0.35, 0.15, 0.10])
QUERY_TYPES = ("words", "entity+words", "entity")  # queries i % 3 == 0, 1, 2
CASES = {
    # name: (depth, record)
    "depth2": (2, True),
    "depth0": (0, True),
    "depth2-norecord": (2, False),
    "depth0-norecord": (0, False),
}


def words(rng: np.random.Generator, n: int, parts: tuple[int, int]) -> list[str]:
    """``n`` distinct made-up words of ``parts`` syllables."""
    out: dict[str, None] = {}
    while len(out) < n:
        k = int(rng.integers(parts[0], parts[1] + 1))
        out["".join(rng.choice(SYLLABLES, size=k))] = None
    return list(out)


def zipf_p(n: int, s: float) -> np.ndarray:
    p = 1.0 / np.arange(1, n + 1) ** s
    return p / p.sum()


def make_workspace(
    root: Path, days: int, per_day: int, n_queries: int, seed: int
) -> tuple[list[str], dict[str, Any]]:
    """Write the daily logs under ``root``; return the queries and corpus facts."""
    rng = np.random.default_rng(seed)
    vocab = words(rng, 3000, (2, 4))
    names = words(rng, 500, (2, 3))
    entities = [n.capitalize() if i % 3 else f"{n}-svc" for i, n in enumerate(names)]
    p_word, p_ent = zipf_p(len(vocab), 0.9), zipf_p(len(entities), 1.1)
    (root / "memory").mkdir(parents=True, exist_ok=True)
    facts: list[tuple[list[str], list[str]]] = []
    for d in range(days):
        day = (FIRST_DAY + dt.timedelta(days=d)).isoformat()
        lines = [f"# {day}", "", "Notes of the day.", "", "## Retain", ""]
        for _ in range(per_day):
            kind = str(rng.choice(KINDS, p=KIND_P))
            n_ent = int(rng.integers(1, 4))
            ents = [entities[i] for i in rng.choice(len(entities), n_ent, replace=False, p=p_ent)]
            content = [vocab[i] for i in rng.choice(len(vocab), int(rng.integers(8, 21)), p=p_word)]
            params = ""
            if kind == "O":
                params += f"(c={rng.integers(1, 10) / 10:.1f})"
            if rng.random() < 0.1:
                params += f"(s={rng.integers(1, 10) / 10:.1f})"
            mentions = " ".join(f"@{e}" for e in ents)
            lines.append(f"- {kind}{params} {mentions}: {' '.join(content)}")
            facts.append((ents, content))
        (root / "memory" / f"{day}.md").write_text("\n".join(lines) + "\n")
    queries = []
    for i in range(n_queries):
        ents, content = facts[int(rng.integers(len(facts)))]
        picked = [content[j] for j in rng.choice(len(content), int(rng.integers(2, 5)), False)]
        if i % 3 == 0:
            queries.append(" ".join(picked))
        elif i % 3 == 1:
            queries.append(f"what did {ents[0]} say about {' '.join(picked[:2])}")
        else:
            queries.append(f"what about @{ents[0]}")
    counts = np.bincount(
        [entities.index(e) for ents, _ in facts for e in ents], minlength=len(entities)
    )
    corpus = {
        "facts": len(facts),
        "days": days,
        "entities_used": int((counts > 0).sum()),
        "top_entity_facts": int(counts.max()),
        "median_entity_facts": float(np.median(counts[counts > 0])),
        "vocabulary": len(vocab),
    }
    return queries, corpus


def lat_ms(ns: list[int]) -> dict[str, float]:
    a = np.asarray(ns, dtype=np.float64) / 1e6
    p50, p95 = np.percentile(a, [50, 95])
    return {"n": len(ns), "p50_ms": float(p50), "p95_ms": float(p95), "mean_ms": float(a.mean())}


def clock_after(days: int) -> TickClock:
    """Noon of the day after the last log, 1 ms per record."""
    start = (FIRST_DAY + dt.timedelta(days=days) - dt.date(1970, 1, 1)).days * DAY_NS
    return TickClock(start_ns=start + DAY_NS // 2)


def bench_init(ws: Path, work: Path, days: int, durability: str) -> tuple[Path, dict[str, Any]]:
    brain_dir = work / "brain"
    t0 = time.perf_counter_ns()
    brain, rep = Brain.init(brain_dir, ws, clock=clock_after(days), durability=durability)
    init_ns = time.perf_counter_ns() - t0
    last = brain.log.last_seq
    brain.close()
    return brain_dir, {
        "init_ms": init_ns / 1e6,
        "facts": rep.facts,
        "fact_problems": len(rep.fact_problems),
        "chunks": rep.nodes,
        "edges": rep.edges,
        "events": last,
    }


def bench_first(brain_dir: Path, days: int, query: str, opens: int) -> dict[str, Any]:
    """Fresh opens: projection load, then the first recall (which builds the fact index)."""
    load_ns, first_ns, second_ns = [], [], []
    for i in range(opens):
        clock = clock_after(days)
        clock.advance(10**12 * (i + 1))  # later than every record so far
        with Brain(brain_dir, clock=clock) as b:
            t0 = time.perf_counter_ns()
            b.store.load("config", "vectors", "memory")
            load_ns.append(time.perf_counter_ns() - t0)
            t0 = time.perf_counter_ns()
            b.recall(query, depth=2, record=False)
            first_ns.append(time.perf_counter_ns() - t0)
            t0 = time.perf_counter_ns()
            b.recall(query, depth=2, record=False)
            second_ns.append(time.perf_counter_ns() - t0)
    return {"load": lat_ms(load_ns), "first": lat_ms(first_ns), "second": lat_ms(second_ns)}


def bench_cases(
    brain_dir: Path, days: int, queries: list[str], durability: str, profile: str
) -> tuple[dict[str, dict[str, Any]], dict[str, Any], str]:
    times: dict[str, list[int]] = {c: [] for c in CASES}
    stats = {c: {"results": 0, "via": 0, "context_chars": 0} for c in CASES}
    prof = cProfile.Profile() if profile else None
    clock = clock_after(days)
    clock.advance(10**13)
    with Brain(brain_dir, clock=clock, durability=durability) as b:
        for q in queries[:5]:  # warm-up: projections and the fact index
            b.recall(q, depth=2, record=False)
        seq0 = b.log.last_seq
        for q in queries:
            for case, (depth, record) in CASES.items():
                if prof is not None and case == profile:
                    prof.enable()
                t0 = time.perf_counter_ns()
                ans = b.recall(q, depth=depth, record=record)
                times[case].append(time.perf_counter_ns() - t0)
                if prof is not None and case == profile:
                    prof.disable()
                st = stats[case]
                st["results"] += len(ans.results)
                st["via"] += sum(1 for it in ans.results if it.via)
                st["context_chars"] += ans.context_chars
        traces = b.log.last_seq - seq0
    out = {}
    for case, ns in times.items():
        out[case] = lat_ms(ns)
        out[case].update({k: v / len(queries) for k, v in stats[case].items()})
        out[case]["by_query_type"] = {
            name: lat_ms(ns[i::3]) for i, name in enumerate(QUERY_TYPES) if ns[i::3]
        }
    text = ""
    if prof is not None:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(30)
        text = buf.getvalue()
    return out, {"traces_recorded": traces}, text


def bench_cold(brain_dir: Path, queries: list[str], runs: int) -> dict[str, Any]:
    """Fresh `ocb recall --associative-depth 2` and `ocb query` processes on the same brain
    (one untimed warm-up each; the CLI records with the system clock)."""
    ocb = str(Path(sys.executable).with_name("ocb"))
    brain = ["--brain", str(brain_dir), "--json"]
    recall = [[ocb, "recall", q, "--associative-depth", "2", *brain] for q in queries[:runs]]
    query = [[ocb, "query", q, *brain] for q in queries[:runs]]
    return {
        "recall_depth2": lat_ms([int(t * 1e9) for t in bench_core.timed_runs(recall)]),
        "query": lat_ms([int(t * 1e9) for t in bench_core.timed_runs(query)]),
    }


def table(res: dict[str, Any]) -> str:
    dur = res["durability"]
    rows = [("Brain.init (10,000 facts, one time)", res["init"]["init_ms"], None, 1)]
    f = res["first_recall"]
    rows.append(("open: load config, vectors, memory", f["load"]["p50_ms"], None, f["load"]["n"]))
    rows.append(
        (
            "first recall, depth 2 (builds the fact index)",
            f["first"]["p50_ms"],
            None,
            f["first"]["n"],
        )
    )
    rows.append(
        ("second recall, depth 2, same open", f["second"]["p50_ms"], None, f["second"]["n"])
    )
    for case, (depth, record) in CASES.items():
        c = res["cases"][case]
        what = f"recorded, durability={dur}" if record else "not recorded"
        rows.append((f"recall depth {depth}, {what}", c["p50_ms"], c["p95_ms"], c["n"]))
    for key, name in (
        ("recall_depth2", "cold `ocb recall --associative-depth 2` process"),
        ("query", "cold `ocb query` process (same brain, baseline)"),
    ):
        c = res["cold"][key]
        rows.append((name, c["p50_ms"], c["p95_ms"], c["n"]))
    lines = ["| case | n | p50 ms | p95 ms |", "|---|---:|---:|---:|"]
    for name, p50, p95, n in rows:
        lines.append(f"| {name} | {n} | {p50:,.2f} | {'-' if p95 is None else f'{p95:,.2f}'} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--days", type=int, default=200)
    ap.add_argument("--per-day", type=int, default=50)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--opens", type=int, default=3, help="fresh opens for the first recall")
    ap.add_argument("--cold", type=int, default=5, help="fresh CLI processes per command")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--durability", choices=["batch", "none"], default="batch")
    ap.add_argument("--profile", choices=list(CASES), default="", help="cProfile one case")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "recall.json")
    args = ap.parse_args()
    res: dict[str, Any] = {"machine": bench_core.machine(), "durability": args.durability}
    print("machine: " + ", ".join(f"{k}={v}" for k, v in res["machine"].items()), flush=True)
    work = Path(tempfile.mkdtemp(prefix="ocb-recall-"))
    try:
        t0 = time.perf_counter()
        queries, res["corpus"] = make_workspace(
            work / "workspace", args.days, args.per_day, args.queries, args.seed
        )
        res["settings"] = {
            "k": 10,
            "max_chars": "default (memory.max_chars)",
            "queries": len(queries),
            "seed": args.seed,
        }
        print(f"workspace: {res['corpus']} ({time.perf_counter() - t0:.1f} s)", flush=True)
        brain_dir, res["init"] = bench_init(work / "workspace", work, args.days, args.durability)
        print(f"init: {res['init']}", flush=True)
        res["first_recall"] = bench_first(brain_dir, args.days, queries[1], args.opens)
        res["cases"], res["log"], prof = bench_cases(
            brain_dir, args.days, queries, args.durability, args.profile
        )
        res["cold"] = bench_cold(brain_dir, queries, args.cold)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    res["machine"]["python_loop_ns_end"] = bench_core.loop_ns()
    print()
    print(table(res))
    print()
    for case, c in res["cases"].items():
        print(
            f"{case}: mean {c['results']:.1f} results, {c['via']:.1f} via entities, "
            f"{c['context_chars']:.0f} context chars; p50 ms by query type: "
            + ", ".join(f"{k} {v['p50_ms']:.2f}" for k, v in c["by_query_type"].items())
        )
    print(
        f"python loop ns: {res['machine']['python_loop_ns']} start, "
        f"{res['machine']['python_loop_ns_end']} end"
    )
    if prof:
        print(f"\ncProfile of {args.profile} (cumulative, top 30):\n{prof}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
