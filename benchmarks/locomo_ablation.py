"""What each part of seeding and assembly adds on the LoCoMo dev set: R@2k per setting.

Builds one brain per conversation in process (once; kept under ``--state``), then asks
every scored question of ``queries.jsonl`` with each variant's ``traversal.*``
overrides (nothing recorded) and scores the answers with the shared evaluator's own
functions (``<data>/tools/evaluate.py``: ``score_question``, budgets 1k/2k/4k). Prints
one table: R@1k/2k/4k overall, R@2k per category, and the in-process query latency.

    .venv/bin/python benchmarks/locomo_ablation.py                  # the ablation table
    .venv/bin/python benchmarks/locomo_ablation.py --variant date_weight=0 --variant max_seeds=6

A variant is a comma-separated list of ``setting=value`` (``traversal.*`` names without
the prefix); ``default`` is the settings in force. Dev numbers: the defaults were chosen
looking at this set.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from locomo_learning import evaluator  # noqa: E402  (the same directory)

from ocb.brain import Brain  # noqa: E402

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "bench" / "locomo-dev"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
BUDGETS = [1000, 2000, 4000]
ABLATION = [
    ("default", ""),
    ("no date boost", "date_weight=0"),
    ("no expansion", "expand_weight=0"),
    ("whole chunks (no passages)", "passages=false"),
    ("4 seeds at 0.5 (the old seeding)", "max_seeds=4,seed_ratio=0.5"),
    ("all four off", "date_weight=0,expand_weight=0,passages=false,max_seeds=4,seed_ratio=0.5"),
]


def brains(
    data: Path, state: Path, convs: list[int], rebuild: bool, embedder: str
) -> dict[int, Brain]:
    out = {}
    state = state / (embedder.replace("/", "_").replace(":", "_") or "hash")
    for c in convs:
        d = state / f"conv-{c}"
        if rebuild and d.exists():
            shutil.rmtree(d)
        if d.exists():
            out[c] = Brain(d)
        else:
            t0 = time.perf_counter()
            out[c], _ = Brain.init(d, data / f"conv-{c}" / "workspace", embedder=embedder)
            print(f"built conv-{c} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return out


def parse_variant(spec: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, _, raw = part.partition("=")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def run(
    ev: ModuleType, data: Path, bs: dict[int, Brain], overrides: dict[str, Any], top: int
) -> tuple[list[dict[str, Any]], list[float]]:
    records, lat = [], []
    for c, brain in bs.items():
        ws = str(data / f"conv-{c}" / "workspace")
        for line in (data / f"conv-{c}" / "queries.jsonl").read_text().splitlines():
            q = json.loads(line)
            if not q["evidence"]:
                continue
            t0 = time.perf_counter()
            ans = brain.query(q["question"], top=top, record=False, **overrides)
            lat.append((time.perf_counter() - t0) * 1000)
            results = [{"source": h.source, "text": h.text} for h in ans.results]
            rec = ev.score_question(q["evidence"], results, [5, 10], ws, budgets=BUDGETS)
            rec["category"] = q["category"]
            rec["qid"] = q["qid"]
            records.append(rec)
    return records, lat


def summary(records: list[dict[str, Any]], lat: list[float]) -> dict[str, float]:
    def mean(key: str, rs: list[dict[str, Any]]) -> float:
        return sum(r[key] for r in rs) / len(rs) if rs else 0.0

    out = {f"R@{b // 1000}k": mean(f"recall@{b // 1000}k", records) for b in BUDGETS}
    for cat, name in CATEGORIES.items():
        out[name] = mean("recall@2k", [r for r in records if r["category"] == cat])
    out["p50 ms"] = statistics.median(lat)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--state", type=Path, default=Path("/tmp/locomo-ablation"))
    ap.add_argument("--convs", default="0,1,2,3")
    ap.add_argument("--rebuild", action="store_true", help="build the brains again")
    ap.add_argument("--embedder", default="hash", help="hash, minilm or http:... (ocb init)")
    ap.add_argument("--top", type=int, default=50)
    ap.add_argument("--variant", action="append", default=[], help="setting=value,...")
    ap.add_argument("--per-question", type=Path, help="write each variant's records here")
    args = ap.parse_args()
    ev = evaluator(args.data)
    convs = [int(c) for c in args.convs.split(",")]
    bs = brains(args.data, args.state, convs, args.rebuild, args.embedder)
    variants = [(v or "default", v) for v in args.variant] or ABLATION
    cols = ["R@1k", "R@2k", "R@4k", *CATEGORIES.values(), "p50 ms"]
    print("| variant | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for name, spec in variants:
        records, lat = run(ev, args.data, bs, parse_variant(spec), args.top)
        s = summary(records, lat)
        print(
            f"| {name} | "
            + " | ".join(f"{s[c]:.3f}" if c != "p50 ms" else f"{s[c]:.1f}" for c in cols)
            + " |",
            flush=True,
        )
        if args.per_question:
            args.per_question.mkdir(parents=True, exist_ok=True)
            with open(args.per_question / f"{name.replace('/', '_')}.jsonl", "w") as fh:
                for r in records:
                    fh.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
