"""Build time and query latency per embedder, in process, on the synthetic workspace of
``bench_core.py`` (1,000 files of 10 sections: about 10,000 chunks).

    .venv/bin/python benchmarks/bench_embedders.py                    # hash and minilm
    .venv/bin/python benchmarks/bench_embedders.py --files 100        # a quick look
    PYTHONPATH=/path/to/older/checkout .venv/bin/python benchmarks/bench_embedders.py \
        --embedders hash --dated                                         # an older release

Per embedder: ``Brain.init`` wall time (chunking, embedding, edges, recording), the
chunks per second of it, then the in-process query latency (``top`` 5, nothing
recorded) over the generated questions, three passes after one warm-up, as p50 / p95.
Both embedders run in one process, one after the other, so they share the machine's
state. A benchmark, not a test: nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import make_workspace  # noqa: E402

from ocb.brain import Brain  # noqa: E402


def run(ws: Path, work: Path, spec: str, queries: list[str]) -> dict[str, float]:
    t0 = time.perf_counter()
    opts = {"embedder": spec} if spec != "hash" else {}  # an older ocb takes no spec
    brain, _ = Brain.init(work / spec.replace(":", "_"), ws, **opts)
    build = time.perf_counter() - t0
    with brain:
        chunks = len(brain.graph.nodes)
        brain.query(queries[0], top=5, record=False)
        xs = []
        for _ in range(3):
            for q in queries:
                t = time.perf_counter()
                brain.query(q, top=5, record=False)
                xs.append((time.perf_counter() - t) * 1000)
    xs.sort()
    return {
        "chunks": chunks,
        "build s": build,
        "chunks/s": chunks / build,
        "p50 ms": statistics.median(xs),
        "p95 ms": xs[int(0.95 * (len(xs) - 1))],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=1000, help="files of 10 sections (1000)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--embedders", default="hash,minilm")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--dated", action="store_true", help='date every fourth question ("on Jan 5, 2024")'
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ocb-bench-emb-") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        qs = [q["text"] for q in make_workspace(ws, args.files, args.queries, args.seed)]
        if args.dated:  # the memory/ files are dated from 2024-01-01
            qs = [q + f" on Jan {1 + i % 28}, 2024" if i % 4 == 0 else q for i, q in enumerate(qs)]
        rows = {spec: run(ws, Path(tmp), spec, qs) for spec in args.embedders.split(",")}
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}, {args.files} files")  # fmt: skip
    cols = ["chunks", "build s", "chunks/s", "p50 ms", "p95 ms"]
    print("| embedder | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for spec, r in rows.items():
        cells = [f"{r[c]:,.0f}" if c in ("chunks", "chunks/s") else f"{r[c]:.1f}" for c in cols]
        print(f"| {spec} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
