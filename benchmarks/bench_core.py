"""Core benchmark: init, log appends, rebuild, query and learn latency on ~10k chunks.

Generates a deterministic synthetic Markdown workspace (runbooks/, notes/, memory/),
measures the brain through its Python API and the ``ocb`` CLI, and optionally runs
the same queries through the published reference package (``openclawbrain``) living in
its own virtualenv. Prints machine facts and a Markdown table; writes JSON to ``--out``.

    .venv/bin/python benchmarks/bench_core.py --quick                  # seconds
    .venv/bin/python benchmarks/bench_core.py --ref-python /tmp/ocb-ref/bin/python

This is a benchmark, not a test: nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import numpy as np

from ocb.brain import Brain
from ocb_events.log import SegmentLog
from ocb_events.schema import (
    ConfigChanged,
    EdgesUpdated,
    OutcomeRecorded,
    QueryTraced,
    RouteUpdated,
)
from replay import rebuild

HERE = Path(__file__).resolve().parent
TOP = 5

# ----------------------------------------------------------------------- workspace

TOPICS = {
    "deploy": "canary rollout helm pipeline artifact bluegreen promote staging manifest argo",
    "rollback": "revert revision hotfix bisect regression featureflag killswitch downgrade",
    "postgres": "vacuum autovacuum replica replication wal pgbouncer bloat deadlock patroni",
    "kafka": "consumer partition offset broker rebalance topic producer retention isr",
    "auth": "oauth token jwt sso session mfa saml okta refresh keycloak",
    "billing": "invoice stripe proration refund ledger subscription chargeback dunning webhook",
    "redis": "eviction keyspace sentinel ttl maxmemory lua cache failover",
    "dns": "resolver cname route53 propagation nameserver zone coredns",
    "tls": "certificate letsencrypt expiry renewal cipher handshake mtls truststore acme",
    "kubernetes": "pod daemonset hpa autoscaler ingress namespace kubelet oomkilled crashloop",
    "monitoring": "grafana prometheus alertmanager dashboard slo burnrate histogram cardinality",
    "incident": "postmortem severity timeline mitigation impact statuspage escalation",
    "backup": "snapshot s3 restore glacier pitr encryption bucket lifecycle",
    "ci": "runner flaky buildcache lint matrix coverage workflow",
    "search": "elasticsearch shard reindex mapping analyzer heap",
    "network": "loadbalancer nginx envoy timeout retry circuitbreaker mtu vpc peering",
}
VOCAB = {t: w.split() for t, w in TOPICS.items()}
VERBS = "restart drain scale pause resume rotate bump patch tune throttle pin flush migrate".split()
ADJS = "slow stale noisy degraded intermittent elevated flaky saturated missing delayed".split()
PEOPLE = "priya marco lena tomas aiko sven nadia omar ruth felix dana kwame".split()
SERVICES = [
    f"{a}-{b}"
    for a in "payments ledger checkout identity gateway notifier catalog "
    "inventory reports ingest scheduler orders".split()
    for b in ("api", "worker", "db")
]
TEMPLATES = [
    "When {svc} shows {a} {b}, check {c} first and page {person} if it lasts {num} minutes.",
    "We had to {verb} {a} on {svc} after the {b} alert fired; {c} recovered in {num} minutes.",
    "Runbook step: {verb} {a}, confirm {b} is healthy, then watch {c} on the {svc} dashboard.",
    "{person} noted that {adj} {a} correlates with {b} and {c} spikes on {svc}.",
    "Never {verb} {a} while {b} is running; {c} on {svc} can end up {adj}.",
    "The {adj} {a} on {svc} came from a bad {b} setting, fixed by setting {c} to {num}.",
    "Decision: keep {a} {adj} for {svc} until {b} lands, revisit {c} in {num} days.",
    "Ask {person} before you {verb} {b}; {a} and {c} on {svc} depend on it.",
]


def _section(rng: random.Random, topic: str) -> tuple[str, list[str]]:
    """One ``##`` section (a heading and 1-2 paragraphs, 280-480 chars of body)."""
    words = VOCAB[topic]
    head = f"## {topic.title()} {rng.choice(words)} {rng.choice(ADJS)}"
    body_len, target = 0, rng.randint(280, 480)
    paras: list[list[str]] = [[]]
    used: list[str] = []
    while body_len < target - 60:
        a, b, c = rng.sample(words, 3)
        svc = rng.choice(SERVICES)
        s = rng.choice(TEMPLATES).format(
            a=a,
            b=b,
            c=c,
            svc=svc,
            person=rng.choice(PEOPLE),
            verb=rng.choice(VERBS),
            adj=rng.choice(ADJS),
            num=rng.randint(2, 90),
        )
        if body_len + len(s) > 480:
            break
        used += [a, b, c, svc]
        paras[-1].append(s)
        body_len += len(s) + 1
        if len(paras) == 1 and rng.random() < 0.3:
            paras.append([])
    text = head + "\n\n" + "\n\n".join(" ".join(p) for p in paras if p)
    return text, used


def make_workspace(root: Path, n_files: int, n_queries: int, seed: int) -> list[dict[str, str]]:
    """Write ``n_files`` Markdown files of 10 sections; return queries with their file."""
    rng = random.Random(seed)
    names = list(VOCAB)
    day0 = datetime.date(2024, 1, 1)
    sections: list[tuple[str, list[str]]] = []
    for i in range(n_files):
        kind = ("runbooks", "notes", "memory")[i % 3]
        main, second = rng.sample(names, 2)
        rel = (
            f"memory/{day0 + datetime.timedelta(days=i // 3)}.md"
            if kind == "memory"
            else f"{kind}/{main}-{i:04d}.md"
        )
        parts = [f"# {main.title()} {kind} {i}"]
        for _ in range(10):
            r = rng.random()
            topic = main if r < 0.6 else second if r < 0.85 else rng.choice(names)
            text, used = _section(rng, topic)
            parts.append(text)
            sections.append((rel, used))
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    queries = []
    for rel, used in rng.sample(sections, n_queries):
        distinct = list(dict.fromkeys(used))  # 4-6 distinctive words of one section
        words = rng.sample(distinct, min(len(distinct), rng.randint(4, 6)))
        queries.append({"text": " ".join(words), "file": rel})
    return queries


# ----------------------------------------------------------------------- helpers


def lat(xs_s: list[float]) -> dict[str, float]:
    """p50/p95 (numpy's linear interpolation) of durations in seconds, in milliseconds."""
    p50, p95 = np.percentile(np.asarray(xs_s) * 1000.0, [50, 95])
    return {"p50_ms": float(p50), "p95_ms": float(p95), "n": len(xs_s)}


def timed_runs(cmds: list[list[str]]) -> list[float]:
    """Wall times of each command as a fresh process (one untimed warm-up first).

    Processes run as on an ordinary install: with bytecode caching, even when this
    shell sets PYTHONDONTWRITEBYTECODE (the warm-up writes the .pyc files)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(cmds[0], capture_output=True, check=True, env=env)
    out = []
    for cmd in cmds:
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True, env=env)
        out.append(time.perf_counter() - t0)
    return out


def loop_ns() -> float:
    """ns per iteration of a fixed pure-Python loop: this host's CPU speed drifts by up
    to 2x over an hour, so each run reports it to put its timings in proportion."""
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        x = 0
        for i in range(2_000_000):
            x += i
        best = min(best, (time.perf_counter() - t0) / 2_000_000 * 1e9)
    return round(best, 1)


def machine() -> dict[str, object]:
    """Facts that explain the numbers (load: other processes share the CPU; no-bytecode:
    cold starts recompile every module that has no cached .pyc)."""
    mem = Path("/proc/meminfo").read_text().split("\n")[0].split()[1]
    cpu = re.search(r"model name\s*:\s*(.*)", Path("/proc/cpuinfo").read_text())
    return {
        "cores": os.cpu_count(),
        "cpu": cpu.group(1) if cpu else platform.processor(),
        "ram_gib": round(int(mem) / 2**20, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.date.today().isoformat(),
        "loadavg_1m": os.getloadavg()[0],
        "python_loop_ns": loop_ns(),
        "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
    }


# ----------------------------------------------------------------------- measurements


def bench_init(ws: Path, work: Path, repeats: int) -> dict[str, object]:
    """In-process ``Brain.create(dir).sync(ws)`` into fresh directories, then one
    ``ocb init`` process (the like-for-like comparison with the reference CLI)."""
    cli = [str(Path(sys.executable).with_name("ocb")), "init", "--workspace", str(ws)]
    t0 = time.perf_counter()
    subprocess.run([*cli, "--brain", str(work / "brain-cli")], capture_output=True, check=True)
    cli_s = time.perf_counter() - t0
    shutil.rmtree(work / "brain-cli")
    times = []
    for r in range(repeats):
        d = work / f"brain-init-{r}"
        t0 = time.perf_counter()
        with Brain.create(d) as b:
            rep = b.sync(ws)
        times.append(time.perf_counter() - t0)
    with Brain(d, writer=False) as b:
        events = b.log.last_seq
    return {
        "median_s": float(np.median(times)),
        "runs_s": times,
        "cli_s": cli_s,
        "brain": str(d),
        "nodes": rep.nodes,
        "edges": rep.edges,
        "events": events,
        "files": rep.files_indexed,
    }


def bench_query_learn(brain_dir: Path, queries: list[dict[str, str]]) -> dict[str, object]:
    """Warm in-process query (recorded, default durability), unrecorded query, learn."""
    rec_t, norec_t, learn_t, traces, hits = [], [], [], [], 0
    with Brain(brain_dir) as b:
        for q in queries[:5]:
            b.query(q["text"], top=TOP, record=False)  # warm-up: loads projections + index
        for q in queries:
            t0 = time.perf_counter()
            a = b.query(q["text"], top=TOP)
            rec_t.append(time.perf_counter() - t0)
            traces.append(a.trace_id)
            hits += any(h.source.split("#")[0] == q["file"] for h in a.results)
        for q in queries:
            t0 = time.perf_counter()
            b.query(q["text"], top=TOP, record=False)
            norec_t.append(time.perf_counter() - t0)
        for i, tid in enumerate(traces):
            t0 = time.perf_counter()
            b.learn(1.0 if i % 3 else -1.0, trace_id=tid)
            learn_t.append(time.perf_counter() - t0)
    return {
        "query": lat(rec_t),
        "query_norecord": lat(norec_t),
        "learn": lat(learn_t),
        "hit_at_5": hits / len(queries),
    }


def bench_append(work: Path, sample: list[object], n_batched: int, n_single: int) -> dict:
    """SegmentLog appends: batches of 1,000 vs one event per append, small vs real mix."""
    small = [ConfigChanged(key="traversal.max_hops", value=1 + i % 5) for i in range(1000)]
    mix = [sample[i % len(sample)] for i in range(1000)]
    out: dict[str, object] = {}
    for label, evs in (("small", small), ("mix", mix)):
        for mode, per, durability, total in (
            ("batched", 1000, "batch", n_batched),
            ("single", 1, "batch", n_single),
            ("single_nofsync", 1, "none", n_single),
        ):
            d = work / f"append-{label}-{mode}"
            with SegmentLog(d, durability=durability) as log:  # type: ignore[arg-type]
                t0 = time.perf_counter()
                for start in range(0, total, per):
                    log.append([evs[(start + k) % 1000] for k in range(per)], actor="bench")
                dt = time.perf_counter() - t0
            out[f"{label}_{mode}_eps"] = total / dt
            out[f"{label}_bytes_per_event"] = sum(p.stat().st_size for p in d.glob("*.seg")) / total
            shutil.rmtree(d)
    return out


def real_triples(
    brain_dir: Path,
) -> list[tuple[QueryTraced, OutcomeRecorded, EdgesUpdated | RouteUpdated]]:
    """(trace, outcome, update) triples recorded by the real API in this brain: the
    update is the edges' (``pg``, ``heuristic``) or the route's (``route``, ``transfer``)."""
    traces, outcomes, result = {}, {}, []
    with Brain(brain_dir, writer=False) as b:
        for rec in b.log.read():
            ev = rec.event
            if isinstance(ev, QueryTraced):
                traces[ev.trace_id] = ev
            elif isinstance(ev, OutcomeRecorded):
                outcomes[rec.seq] = ev
            elif isinstance(ev, EdgesUpdated | RouteUpdated) and ev.cause_seq in outcomes:
                o = outcomes[ev.cause_seq]
                result.append((traces[o.trace_id], o, ev))
    return result


def grow_log(
    brain_dir: Path, dest: Path, extra: int, traces_per_outcome: int
) -> dict[str, list[float]]:
    """Copy the brain to ``dest`` and append ``extra`` events made of copies of real
    (trace, outcome, update) triples: each outcome comes after ``traces_per_outcome``
    traces, so 1 means every query is learned from. Returns the seconds of each append
    of a batch that started a segment (``sealed``: the append that seals the full one
    and stores it compressed) and of every other (``plain``)."""
    triples = real_triples(brain_dir)
    shutil.copytree(brain_dir, dest)
    times: dict[str, list[float]] = {"sealed": [], "plain": []}
    with SegmentLog(dest / "log", durability="none") as log:
        k, goal = 0, log.last_seq + extra
        segments = len(list((dest / "log").glob("*.seg")))
        while log.last_seq < goal:
            batch: list[object] = []
            while len(batch) < 1000:
                tr, oc, up = triples[k % len(triples)]
                for j in range(traces_per_outcome):
                    batch.append(msgspec.structs.replace(tr, trace_id=f"b{k}-{j}"))
                oseq = log.last_seq + len(batch) + 1
                batch += [
                    msgspec.structs.replace(oc, trace_id=f"b{k}-0"),
                    msgspec.structs.replace(up, cause_seq=oseq),
                ]
                k += 1
            t0 = time.perf_counter()
            log.append(batch, actor="bench")  # type: ignore[arg-type]
            took = time.perf_counter() - t0
            now = len(list((dest / "log").glob("*.seg")))
            times["sealed" if now > segments else "plain"].append(took)
            segments = now
    return times


def bench_rebuild(brain_dir: Path, work: Path, extra: int, repeats: int) -> dict[str, object]:
    """``replay.rebuild`` of grown logs in two usage mixes (and, for attribution, a
    decode-only pass over the same log)."""
    out: dict[str, object] = {}
    for label, per in (("learned", 1), ("queries", 4)):
        d = work / f"brain-rebuild-{label}"
        grow_log(brain_dir, d, extra, per)
        full, decode = [], []
        with SegmentLog(d / "log", writer=False) as log:
            n = log.last_seq
            for _ in range(repeats):
                t0 = time.perf_counter()
                sum(1 for _ in log.read(light=True))
                decode.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                rebuild(log)
                full.append(time.perf_counter() - t0)
        mb = sum(p.stat().st_size for p in (d / "log").glob("*.seg")) / 2**20
        shutil.rmtree(d)
        out[label] = {
            "traces_per_outcome": per,
            "events": n,
            "log_mib": round(mb, 1),
            "median_s": float(np.median(full)),
            "eps": n / float(np.median(full)),
            "decode_only_eps": n / float(np.median(decode)),
            "runs_s": full,
        }
    return out


def bench_cold(brain_dir: Path, queries: list[dict[str, str]], runs: int) -> dict[str, object]:
    """``ocb query --json`` as fresh processes, and the interpreter's own start as a floor."""
    ocb = str(Path(sys.executable).with_name("ocb"))
    cmds = [
        [ocb, "query", q["text"], "--brain", str(brain_dir), "--top", str(TOP), "--json"]
        for q in queries[:runs]
    ]
    floor = timed_runs([[sys.executable, "-c", "pass"]] * 10)
    return {"query": lat(timed_runs(cmds)), "python_floor": lat(floor)}


# ----------------------------------------------------------------------- reference

REF_SNIPPET = r"""
import json, sys, time
from pathlib import Path
from openclawbrain import HashEmbedder, TraversalConfig, load_state, traverse
from openclawbrain.journal import log_query
state, qfile, top = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0 = time.perf_counter(); graph, index, meta = load_state(state); load_s = time.perf_counter() - t0
emb, journal = HashEmbedder(), str(Path(state).parent / "journal.jsonl")
lat, files = [], []
for q in json.loads(Path(qfile).read_text()):
    t0 = time.perf_counter()
    seeds = index.search(emb.embed(q), top_k=top)   # what `openclawbrain query` does
    res = traverse(graph=graph, seeds=seeds, config=TraversalConfig(max_hops=15), query_text=q)
    log_query(query_text=q, fired_ids=res.fired, node_count=graph.node_count(),
              journal_path=journal)
    lat.append(time.perf_counter() - t0)
    files.append([f.split("::")[0] for f in list(dict.fromkeys(res.fired))[:top]])
print(json.dumps({"load_s": load_s, "lat": lat, "files": files, "nodes": graph.node_count(),
                  "edges": graph.edge_count()}))
"""


def bench_ref(
    ref_py: Path, ws: Path, work: Path, queries: list[dict[str, str]], runs: int
) -> dict[str, object]:
    """The reference package: init via its CLI (hash embedder, no LLM), warm queries
    through its Python API in one process, cold queries through its CLI."""
    cli = str(ref_py.with_name("openclawbrain"))
    out = work / "ref-brain"
    t0 = time.perf_counter()
    init = [cli, "init", "--workspace", str(ws), "--output", str(out)]
    subprocess.run([*init, "--embedder", "hash", "--llm", "none"], capture_output=True, check=True)
    init_s = time.perf_counter() - t0
    state = out / "state.json"
    qfile, snippet = work / "ref-queries.json", work / "ref_snippet.py"
    qfile.write_text(json.dumps([q["text"] for q in queries]))
    snippet.write_text(REF_SNIPPET)
    run = [str(ref_py), str(snippet), str(state), str(qfile), str(TOP)]
    got = json.loads(subprocess.run(run, capture_output=True, check=True, text=True).stdout)
    hits = sum(q["file"] in f for q, f in zip(queries, got["files"], strict=False))
    cmds = [
        [cli, "query", q["text"], "--state", str(state), "--top", str(TOP), "--json"]
        for q in queries[:runs]
    ]
    return {
        "init_s": init_s,
        "nodes": got["nodes"],
        "edges": got["edges"],
        "load_s": got["load_s"],
        "query": lat(got["lat"]),
        "hit_at_5": hits / len(got["lat"]),
        "cold": lat(timed_runs(cmds)),
        "state_mib": round(state.stat().st_size / 2**20, 1),
    }


# ----------------------------------------------------------------------- report


def rows(res: dict, ref: dict | None) -> list[tuple[str, float, float | None, str, str]]:
    """(metric, ours, reference, better: lo/hi/'' for no ratio, target) for the table."""
    r, i, q, c, a = ref or {}, res["init"], res["query"], res["cold"], res["append"]
    rq, rc = r.get("query", {}), r.get("cold", {})
    return [
        ("init, s (in process, median)", i["median_s"], None, "lo", ""),
        ("init, s (CLI process, 1 run)", i["cli_s"], r.get("init_s"), "lo", ""),
        ("graph nodes after init", i["nodes"], r.get("nodes"), "", ""),
        ("graph edges after init", i["edges"], r.get("edges"), "", ""),
        ("log events after init", i["events"], None, "", ""),
        ("query p50, ms (in process)", q["query"]["p50_ms"], rq.get("p50_ms"), "lo", "<= 5"),
        ("query p95, ms (in process)", q["query"]["p95_ms"], rq.get("p95_ms"), "lo", ""),
        ("query p50, ms (record=False)", q["query_norecord"]["p50_ms"], None, "lo", ""),
        ("cold CLI query p50, ms", c["query"]["p50_ms"], rc.get("p50_ms"), "lo", "<= 300"),
        ("cold CLI query p95, ms", c["query"]["p95_ms"], rc.get("p95_ms"), "lo", ""),
        ("python -c pass p50, ms (floor)", c["python_floor"]["p50_ms"], None, "lo", ""),
        ("learn p50, ms (in process)", q["learn"]["p50_ms"], None, "lo", ""),
        ("learn p95, ms (in process)", q["learn"]["p95_ms"], None, "lo", ""),
        ("file hit@5 (sanity, not speed)", q["hit_at_5"], r.get("hit_at_5"), "hi", ""),
        *[
            (f"append {kind}, {how}, ev/s", a[f"{kind}_{key}_eps"], None, "hi", "")
            for kind in ("small", "mix")
            for key, how in (
                ("batched", "1000/append fsync"),
                ("single", "1/append fsync"),
                ("single_nofsync", "1/append no fsync"),
            )
        ],
        *[
            row
            for label, how in (
                ("queries", "4 queries per outcome"),
                ("learned", "every query learned"),
            )
            for row in (
                (f"rebuild, ev/s ({how})", res["rebuild"][label]["eps"], None, "hi", ">= 100000"),
                (
                    f"read+decode only, ev/s ({how})",
                    res["rebuild"][label]["decode_only_eps"],
                    None,
                    "hi",
                    "",
                ),
            )
        ],
    ]


def fmt(x: float | None) -> str:
    if x is None or isinstance(x, int):
        return "-" if x is None else f"{x:,}"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}" if abs(x) < 10 else f"{x:.1f}"


def table(res: dict, ref: dict | None) -> str:
    lines = [
        "| metric | ours | reference | ratio (>1 = ours better) | target |",
        "|---|---:|---:|---:|---|",
    ]
    for name, ours, theirs, better, target in rows(res, ref):
        ratio = None
        if theirs and ours and better:
            ratio = theirs / ours if better == "lo" else ours / theirs
        lines.append(
            f"| {name} | {fmt(ours)} | {fmt(theirs)} | "
            f"{'-' if ratio is None else f'{ratio:.2f}x'} | {target} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="1,000 chunks, few repeats (smoke run)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "core.json")
    ap.add_argument("--workspace-out", type=Path, help="write the workspace here (kept)")
    ap.add_argument("--ref-python", type=Path, default=Path("/tmp/ocb-ref/bin/python"))
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rebuild-events", type=int, help="events added for the rebuild (150k)")
    args = ap.parse_args()
    q = args.quick
    n_files, n_queries, cold_runs, reps = (100, 50, 5, 1) if q else (1000, 200, 20, 3)
    extra = args.rebuild_events or (15_000 if q else 150_000)
    work = Path(tempfile.mkdtemp(prefix="ocb-bench-"))
    ws = args.workspace_out or work / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    res: dict[str, object] = {
        "machine": machine(),
        "quick": q,
        "files": n_files,
        "queries": n_queries,
        "cold_runs": cold_runs,
        "repeats": reps,
    }
    print("machine: " + ", ".join(f"{k}={v}" for k, v in res["machine"].items()), flush=True)
    queries = make_workspace(ws, n_files, n_queries, args.seed)

    def step(name: str, fn: Callable[[], dict]) -> dict:
        print(f"{name} ...", flush=True)
        res[name] = got = fn()
        return got

    brain_dir = Path(step("init", lambda: bench_init(ws, work, reps))["brain"])
    step("query", lambda: bench_query_learn(brain_dir, queries))
    step("cold", lambda: bench_cold(brain_dir, queries, cold_runs))
    mix = [ev for t in real_triples(brain_dir) for ev in t]
    step("append", lambda: bench_append(work, mix, 10_000 if q else 100_000, 200 if q else 1000))
    step("rebuild", lambda: bench_rebuild(brain_dir, work, extra, 2 if q else 3))
    ref = None
    if args.ref_python.exists():
        ref = step("reference", lambda: bench_ref(args.ref_python, ws, work, queries, cold_runs))
    else:
        res["reference"] = None
        print(f"reference column skipped: {args.ref_python} not found", flush=True)
    res["machine"]["loadavg_1m_end"] = os.getloadavg()[0]  # type: ignore[index]
    res["machine"]["python_loop_ns_end"] = loop_ns()  # type: ignore[index]
    keys = ("metric", "ours", "reference", "better", "target")
    res["table"] = [dict(zip(keys, r, strict=True)) for r in rows(res, ref)]
    print("\n" + table(res, ref))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2, default=str) + "\n")
    print(f"\nwrote {args.out}")
    shutil.rmtree(work)  # the workspace survives only under --workspace-out


if __name__ == "__main__":
    main()
