"""Traversal latency by graph size, ours beside the published ``openclawbrain`` 12.2.6,
on the same synthetic graphs, in one process.

For each size (50 to 20,000 nodes) a seeded random graph is built twice: as our graph
projection (folded from FileIndexed + EdgesCreated events) and as the reference's
``Graph``. Every node has 5 outgoing edges (weights uniform in 0.2-0.6, one in ten
reflex at 0.7-0.95). The same 200 traversals (4 seeds each) run on both with the same
budgets: 3 hops, 30 fired nodes, 6,000 context characters. The reference is imported
from its own virtualenv's site-packages (``--ref-site``), appended to ``sys.path``.

    .venv/bin/python benchmarks/bench_traversal.py \\
        --ref-site /tmp/ocb-ref/lib/python3.11/site-packages

This is a benchmark, not a test: nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from ocb.engine.traverse import traverse
from ocb.settings import Traversal
from ocb_events.schema import ChunkText, EdgesCreated, EdgeSpec, FileIndexed, Record
from projections import graph

HERE = Path(__file__).resolve().parent
SIZES = [50, 200, 1_000, 5_000, 20_000]
OUT_DEGREE = 5
RUNS = 200
BUDGETS = Traversal(max_hops=3, max_fired=30, max_context_chars=6000)


def random_graph(n: int, seed: int) -> tuple[list[str], list[tuple[str, str, float]]]:
    rng = random.Random(seed)
    ids = [f"f{i // 10}.md::{i % 10}" for i in range(n)]
    edges = []
    for i, src in enumerate(ids):
        for j in rng.sample(range(n - 1), min(OUT_DEGREE, n - 1)):
            dst = ids[j + 1 if j >= i else j]
            w = rng.uniform(0.7, 0.95) if rng.random() < 0.1 else rng.uniform(0.2, 0.6)
            edges.append((src, dst, round(w, 4)))
    return ids, edges


def ours(ids: list[str], edges: list[tuple[str, str, float]]) -> graph.State:
    state = graph.initial()
    text = "x" * 200
    by_file: dict[str, list[ChunkText]] = {}
    for k, node_id in enumerate(ids):
        path = node_id.split("::")[0]
        by_file.setdefault(path, []).append(
            ChunkText(id=node_id, text=text, text_hash=str(k), start_line=k, end_line=k)
        )
    events: list[Any] = [
        FileIndexed(path=p, content_hash=p, chunks=tuple(cs)) for p, cs in by_file.items()
    ]
    events.append(
        EdgesCreated(
            edges=tuple(EdgeSpec(source=a, target=b, weight=w, kind="x") for a, b, w in edges)
        )
    )
    for seq, ev in enumerate(events, 1):
        state = graph.evolve(state, Record(seq=seq, ts=seq, actor="bench", event=ev))
    return state


def reference(ids: list[str], edges: list[tuple[str, str, float]]) -> Any:
    from openclawbrain.graph import Edge, Graph, Node

    g = Graph()
    for node_id in ids:
        g.add_node(Node(id=node_id, content="x" * 200))
    for a, b, w in edges:
        g.add_edge(Edge(source=a, target=b, weight=w))
    return g


def seed_sets(ids: list[str], seed: int) -> list[list[tuple[str, float]]]:
    rng = random.Random(seed)
    return [[(i, 1.0 - 0.1 * k) for k, i in enumerate(rng.sample(ids, 4))] for _ in range(RUNS)]


def timed(fn: Any, seeds: list[list[tuple[str, float]]]) -> tuple[float, float]:
    """Median ms per traversal and median fired nodes."""
    ms, fired = [], []
    for s in seeds:
        t0 = time.perf_counter()
        n = fn(s)
        ms.append((time.perf_counter() - t0) * 1000)
        fired.append(n)
    return statistics.median(ms), statistics.median(fired)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref-site", type=Path, help="site-packages holding openclawbrain 12.2.6")
    ap.add_argument("--quick", action="store_true", help="sizes up to 1,000")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "traversal.json")
    args = ap.parse_args()
    has_ref = bool(args.ref_site and args.ref_site.exists())
    if has_ref:
        sys.path.append(str(args.ref_site))
        from openclawbrain.traverse import TraversalConfig, traverse as ref_traverse

        ref_cfg = TraversalConfig(max_hops=3, max_fired_nodes=30, max_context_chars=6000)
    else:
        print("reference skipped: pass --ref-site with openclawbrain 12.2.6 installed")
    rows = []
    for n in SIZES[:3] if args.quick else SIZES:
        ids, edges = random_graph(n, seed=n)
        seeds = seed_sets(ids, seed=n + 1)
        g = ours(ids, edges)
        our_ms, our_fired = timed(lambda s, g=g: len(traverse(g, s, BUDGETS).fired), seeds)
        row = {"nodes": n, "edges": len(edges), "ours_ms": our_ms, "ours_fired": our_fired}
        if has_ref:
            rg = reference(ids, edges)
            ref_ms, ref_fired = timed(
                lambda s, rg=rg: len(ref_traverse(rg, s, ref_cfg).fired), seeds
            )
            row.update(ref_ms=ref_ms, ref_fired=ref_fired, ratio=ref_ms / our_ms)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print("\n| nodes | edges | ours ms | fired | reference ms | fired | ratio (ref / ours) |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        ref = (
            f"{r['ref_ms']:.3f} | {r['ref_fired']:.0f} | {r['ratio']:.2f}x"
            if "ref_ms" in r
            else "- | - | -"
        )
        ours_cols = f"{r['ours_ms']:.3f} | {r['ours_fired']:.0f}"
        print(f"| {r['nodes']:,} | {r['edges']:,} | {ours_cols} | {ref} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
