"""Typed-memory recall on the LoCoMo dev set (conversations 0-3), beside BM25 and `ocb query`.

One command runs the shared evaluator (``<data>/tools/evaluate.py``, same interpreter) for:

    recall-d0           Brain.recall at associative depth 0 (benchmarks/adapters/ocb_recall.py,
                        in process): each turn line rewritten, line for line, into a Retain
                        fact ``- B @Speaker: text``; every recall recorded (the product path),
                        max_chars=10**9 so k results come back
    recall-d2           the same at associative depth 2
    recall-d{0,2}-norecord  diagnostics: the same, read only (record=False), so earlier
                        questions' recalls do not change access decay for later ones
    recall-d{0,2}-2k    diagnostics: recorded, with the product's default budget
                        (memory.max_chars 2000) instead of 10**9
    bm25-lines-w1       the evaluator's BM25 baseline over the same single turn lines
    ocb                 `ocb query` through the evaluator's CLI adapter (as benchmarks/locomo.py)

Each system's full report goes to ``<out>/<system>/`` (results.json, results.md,
per_question.jsonl), its state to /tmp/locomo-recall-state/<system>; the combined tables
are printed and written to ``<out>/summary.md`` and ``<out>/summary.json``.

    .venv/bin/python benchmarks/locomo_recall.py                       # everything, ~30 s
    .venv/bin/python benchmarks/locomo_recall.py --only recall --convs 1
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import locomo  # noqa: E402  (the ocb / BM25 adapter arguments and the row summary)

REPO = HERE.parent
DEFAULT_DATA = locomo.DEFAULT_DATA
DEFAULT_OUT = HERE / "results" / "locomo_recall"
STATE_ROOT = Path("/tmp/locomo-recall-state")
ADAPTER = HERE / "adapters" / "ocb_recall.py"
BASELINE = "bm25-lines-w1"
GROUPS = {
    "recall": ["recall-d0", "recall-d2"],
    "recall-diag": ["recall-d0-norecord", "recall-d2-norecord", "recall-d0-2k", "recall-d2-2k"],
    "bm25-lines": [BASELINE],
    "ocb": ["ocb"],
}
CATEGORIES = locomo.CATEGORIES
COLUMNS = locomo.COLUMNS


def recall_settings(system: str) -> list[str]:
    """RECALL_* settings of a recall-d<depth>[-norecord|-2k] system."""
    name = system.removeprefix("recall-d")
    depth, _, variant = name.partition("-")
    out = [f"RECALL_DEPTH={int(depth)}"]
    if variant == "norecord":
        out.append("RECALL_RECORD=0")
    elif variant == "2k":
        out.append("RECALL_MAX_CHARS=2000")
    elif variant:
        raise ValueError(system)
    return out


def system_args(system: str, data: Path) -> list[str]:
    if system.startswith("recall-"):
        args = ["--adapter", str(ADAPTER)]
        for kv in recall_settings(system):
            args += ["--set", kv]
        return args
    return locomo.system_args(system, data)


def _json_files(system: str, name: str) -> list[dict]:
    out = []
    for p in sorted((STATE_ROOT / system).glob(f"conv-*/{name}")):
        try:
            out.append(json.loads(p.read_text()))
        except (OSError, ValueError):
            continue
    return out


def adapter_facts(system: str) -> dict:
    """The recall adapter's build config (first conversation) and its per-question stats
    summed over conversations (the evaluator's warm-up question included)."""
    cfgs = _json_files(system, "config.json")
    cfg = {k: v for k, v in (cfgs[0] if cfgs else {}).items() if not k.startswith("n_")}
    for key in ("files", "sessions", "turn_lines", "facts", "fact_problems", "warnings"):
        if cfgs and key in cfgs[0]:
            cfg[key] = sum(c.get(key, 0) for c in cfgs)
    cfg.pop("clock_start", None)
    stats = _json_files(system, "recall_stats.json")
    if stats:
        q = sum(s["questions"] for s in stats)
        cfg["questions_asked"] = q
        cfg["date_phrase"] = sum(s["date_phrase"] for s in stats)
        cfg["empty"] = sum(s["empty"] for s in stats)
        cfg["via_share"] = round(
            sum(s["via_share_mean"] * s["questions"] for s in stats) / max(1, q), 3
        )
    return cfg


def summarize(system: str, res: dict, wall_s: float) -> dict:
    row = locomo.summarize(system, res, wall_s)
    row["adapter_config"] = adapter_facts(system)
    return row


_fmt = locomo._fmt


def markdown(rows: list[dict], data: Path, convs: str) -> str:
    base = next((r for r in rows if r["system"] == BASELINE), None)
    lines = [
        "# LoCoMo dev retrieval: typed-memory recall vs BM25 lines and `ocb query`",
        "",
        f"data: `{data.name}`, conversations: {rows[0]['convs'] if rows else convs}, "
        f"questions scored: {rows[0]['n'] if rows else 0}. R@k = evidence-line recall in the "
        "first k results; R@1k/2k/4k = recall within a context budget of that many "
        "characters; chars@k = mean context characters of the first k results; "
        f"ΔR@2k = R@2k minus {BASELINE}'s, same run; build s = sum over conversations; "
        "query ms = per question, in process.",
        "",
    ]
    head = ["system"] + [c for c, _, _ in COLUMNS] + ["ΔR@2k", "build s", "p50 ms", "p95 ms"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for r in rows:
        cells = [r["system"]] + [_fmt(r[key], spec) for _, key, spec in COLUMNS]
        delta = None if base is None else r["recall@2k"] - base["recall@2k"]
        cells.append("–" if delta is None else f"{delta:+.3f}")
        cells += [
            _fmt(r["build_s"], ".1f"),
            _fmt(r["query_p50_ms"], ".1f"),
            _fmt(r["query_p95_ms"], ".1f"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    cats = [c for c in CATEGORIES if any(c in r["categories"] for r in rows)]
    for key, title in (("recall@10", "R@10"), ("recall@2k", "R@2k"), ("mrr", "MRR@10")):
        lines += ["", f"{title} per category:", ""]
        head = ["system"]
        for c in cats:
            n = next(r["categories"][c]["n"] for r in rows if c in r["categories"])
            head.append(f"{c} (n={n})")
        head.append("overall")
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for r in rows:
            cells = [r["system"]]
            cells += [_fmt(r["categories"].get(c, {}).get(key), ".3f") for c in cats]
            cells.append(_fmt(r[key], ".3f"))
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "adapter settings and facts:", ""]
    for r in rows:
        cfg = r["adapter_config"] or {}
        extra = ", ".join(f"{k}={v}" for k, v in cfg.items())
        settings = " ".join(r["settings"])
        lines.append(
            f"- {r['system']}: {settings or '(defaults)'}" + (f"; {extra}" if extra else "")
        )
    bases: dict[str, list[str]] = {}
    for r in rows:
        bases.setdefault(r["latency_basis"], []).append(r["system"])
    lines += ["", "query latency: " + "; ".join(f"{', '.join(v)}: {k}" for k, v in bases.items())]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo dev folder")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    ap.add_argument("--convs", default="", help="conversations, e.g. 0-3 or 1,2 (default all)")
    ap.add_argument(
        "--only", action="append", choices=list(GROUPS), help="run only this group (repeatable)"
    )
    args = ap.parse_args(argv)

    data = args.data.resolve()
    if not (data / "tools" / "evaluate.py").is_file():
        ap.error(f"{data} has no tools/evaluate.py (pass --data)")
    systems = [s for g in (args.only or list(GROUPS)) for s in GROUPS[g]]
    if "ocb" in systems and not locomo.ocb_bin().is_file():
        ap.error(f"{locomo.ocb_bin()} not found: pip install -e . into this environment")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)

    rows, failed = [], []
    for system in systems:
        rc, wall = locomo.run_system(
            system, data, out, args.convs, args=system_args(system, data), state_root=STATE_ROOT
        )
        results = out / system / "results.json"
        if rc != 0 or not results.is_file():
            print(f"[{system}] FAILED (exit {rc})", file=sys.stderr, flush=True)
            failed.append(system)
            continue
        rows.append(summarize(system, json.loads(results.read_text()), wall))

    md = markdown(rows, data, args.convs)
    if failed:
        md += f"\nfailed: {', '.join(failed)}\n"
    (out / "summary.md").write_text(md)
    summary = {
        "data": data.name,
        "convs": args.convs or "all",
        "baseline": BASELINE,
        "systems": rows,
        "failed": failed,
        "python": locomo._rel(Path(sys.executable)),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(md, end="")
    print(f"wrote {out / 'summary.md'} and summary.json", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
