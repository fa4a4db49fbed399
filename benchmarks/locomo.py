"""Retrieval quality on the LoCoMo dev set (conversations 0-3): ocb against BM25 baselines.

One command runs the shared evaluator (``<data>/tools/evaluate.py``, same interpreter) for:

    ocb              the `ocb` CLI of this interpreter's environment, through the evaluator's
                     command protocol with one `ocb query --batch` per conversation
                     (tools/adapters/ocb_cli.py, OCB_BATCH=1, OCB_BIN=<venv>/bin/ocb)
    bm25-chunks      plain BM25 (k1=1.2, b=0.75, lowercase words) over the same chunks ocb
                     indexes (benchmarks/adapters/bm25_ocb_chunks.py)
    bm25-lines-w1    the evaluator's BM25 baseline over single turn lines (LOCOMO_WINDOW=1)
    bm25-lines-w5    ... over 5-line windows (LOCOMO_WINDOW=5)

Each system's full report goes to ``<out>/<system>/`` (results.json, results.md,
per_question.jsonl) with its state under /tmp/locomo-state/<system>; the combined table is
printed and written to ``<out>/summary.md`` and ``<out>/summary.json``.

    .venv/bin/python benchmarks/locomo.py                      # everything, ~20 s
    .venv/bin/python benchmarks/locomo.py --only ocb --convs 1 # a quick look
    .venv/bin/python benchmarks/locomo.py --only ocb --embedder minilm  # ocb[embed]

``--embedder SPEC`` builds the ocb brains with ``ocb init --embedder SPEC`` (the system is
then named ``ocb-SPEC``, its state kept apart); the queries go through the same adapter.

The evaluator's log (stderr and its per-system report) passes through on stderr with a
``[system]`` prefix; stdout carries only the combined tables.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_DATA = REPO.parent / "shared" / "bench" / "locomo-dev"
DEFAULT_OUT = HERE / "results" / "locomo"
STATE_ROOT = Path("/tmp/locomo-state")
GROUPS = {
    "ocb": ["ocb"],
    "bm25-chunks": ["bm25-chunks", "bm25-chunks-ocb-terms"],
    "bm25-lines": ["bm25-lines-w1", "bm25-lines-w5"],
}
CATEGORIES = ["1-multi-hop", "2-temporal", "3-open-domain", "4-single-hop"]
# (column title, results.json metric key, format)
COLUMNS = [
    ("R@5", "recall@5", ".3f"),
    ("R@10", "recall@10", ".3f"),
    ("MRR@10", "mrr", ".3f"),
    ("chars@5", "chars@5", ".0f"),
    ("chars@10", "chars@10", ".0f"),
    ("R@1k", "recall@1k", ".3f"),
    ("R@2k", "recall@2k", ".3f"),
    ("R@4k", "recall@4k", ".3f"),
]


def ocb_bin() -> Path:
    """The `ocb` script next to this interpreter (a fresh clone's venv, not PATH's)."""
    return Path(sys.executable).parent / "ocb"


def system_args(system: str, data: Path) -> list[str]:
    """evaluate.py arguments that select the adapter of one system (``ocb-SPEC``: ocb
    built with ``ocb init --embedder SPEC``)."""
    py = shlex.quote(sys.executable)
    tools = data / "tools"
    if system == "ocb" or system.startswith("ocb-"):
        cli = shlex.quote(str(tools / "adapters" / "ocb_cli.py"))
        build = f"{py} {cli} build {{workspace}} {{state}}"
        if system != "ocb":  # the adapter keeps its brain in {state}/brain
            spec = shlex.quote(system.removeprefix("ocb-"))
            build = (
                f"{shlex.quote(str(ocb_bin()))} init --workspace {{workspace}} "
                f"--brain {{state}}/brain --embedder {spec}"
            )
        return [
            "--build-cmd",
            build,
            "--adapter-cmd",
            f"OCB_BATCH=1 {py} {cli} query {{state}} {{k}}",
            "--set",
            f"OCB_BIN={shlex.quote(str(ocb_bin()))}",
        ]
    if system == "bm25-chunks":
        return ["--adapter", str(HERE / "adapters" / "bm25_ocb_chunks.py")]
    if system == "bm25-chunks-ocb-terms":
        adapter = str(HERE / "adapters" / "bm25_ocb_chunks.py")
        return ["--adapter", adapter, "--set", "BM25_TOKENS=ocb"]
    if system.startswith("bm25-lines-w"):
        window = system.removeprefix("bm25-lines-w")
        return [
            "--adapter",
            str(tools / "adapters" / "bm25_lines.py"),
            "--set",
            f"LOCOMO_WINDOW={window}",
        ]
    raise ValueError(system)


def run_system(
    system: str,
    data: Path,
    out: Path,
    convs: str,
    *,
    args: list[str] | None = None,
    state_root: Path = STATE_ROOT,
) -> tuple[int, float]:
    """Run evaluate.py for one system (``args``: its adapter arguments, ``system_args``
    by default); its output goes to stderr, prefixed. -> (rc, seconds)."""
    cmd = [
        sys.executable,
        str(data / "tools" / "evaluate.py"),
        "--data",
        str(data),
        "--name",
        system,
        "--out",
        str(out / system),
        "--state-root",
        str(state_root / system),
        *(system_args(system, data) if args is None else args),
    ]
    if convs:
        cmd += ["--convs", convs]
    print(f"[{system}] $ {shlex.join(cmd)}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    ) as p:
        assert p.stdout is not None
        for line in p.stdout:
            sys.stderr.write(f"[{system}] {line}")
            sys.stderr.flush()
        rc = p.wait()
    return rc, time.perf_counter() - t0


def state_config(system: str) -> dict:
    """The adapter's own config.json of its first conversation (backend, stemming...), if any."""
    for cfg in sorted((STATE_ROOT / system).glob("conv-*/config.json")):
        try:
            got = json.loads(cfg.read_text())
        except (OSError, ValueError):
            continue
        return {k: v for k, v in got.items() if not k.startswith("n_")}
    return {}


def summarize(system: str, res: dict, wall_s: float) -> dict:
    grp = res["groups"]["all"]
    overall = grp["metrics"]["overall"]
    row = {"system": system, "n": overall["n"]}
    row.update({key: overall[key] for _, key, _ in COLUMNS})
    row["build_s"] = grp["build_s"]["sum"]
    row["query_p50_ms"] = grp["latency_ms"]["p50"]
    row["query_p95_ms"] = grp["latency_ms"]["p95"]
    row["wall_s"] = wall_s
    row["latency_basis"] = res["latency_basis"]
    row["adapter"] = res["config"]["adapter"]
    row["settings"] = res["config"]["settings"]
    row["convs"] = res["config"]["convs"]
    row["adapter_config"] = state_config(system)
    row["categories"] = {
        cat: {"n": m["n"], **{key: m[key] for _, key, _ in COLUMNS}}
        for cat, m in grp["metrics"].items()
        if cat != "overall" and m["n"]
    }
    return row


def _fmt(x: float | None, spec: str) -> str:
    return "–" if x is None else format(x, spec)


def markdown(rows: list[dict], data: Path, convs: str) -> str:
    lines = [
        "# LoCoMo dev retrieval: ocb vs BM25 baselines",
        "",
        f"data: `{data.name}`, conversations: {rows[0]['convs'] if rows else convs}, "
        f"questions scored: {rows[0]['n'] if rows else 0}. "
        "R@k = evidence-line recall in the first k results; R@1k/2k/4k = recall within a "
        "context budget of that many characters; chars@k = mean context characters of the "
        "first k results; build s = sum over conversations; query p50 = per question.",
        "",
    ]
    head = ["system"] + [c for c, _, _ in COLUMNS] + ["build s", "query p50 ms"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for r in rows:
        cells = [r["system"]] + [_fmt(r[key], spec) for _, key, spec in COLUMNS]
        cells += [_fmt(r["build_s"], ".1f"), _fmt(r["query_p50_ms"], ".1f")]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "R@2k per category:", ""]
    cats = [c for c in CATEGORIES if any(c in r["categories"] for r in rows)]
    head = (
        ["system"]
        + [
            f"{c} (n={next(r['categories'][c]['n'] for r in rows if c in r['categories'])})"
            for c in cats
        ]
        + ["overall"]
    )
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for r in rows:
        cells = (
            [r["system"]]
            + [_fmt(r["categories"].get(c, {}).get("recall@2k"), ".3f") for c in cats]
            + [_fmt(r["recall@2k"], ".3f")]
        )
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "adapter settings: "
        + "; ".join(
            f"{r['system']}: " + ", ".join(f"{k}={v}" for k, v in r["adapter_config"].items())
            for r in rows
            if r["adapter_config"]
        ),
    ]
    lines += [
        "",
        "query latency: " + "; ".join(f"{r['system']}: {r['latency_basis']}" for r in rows),
    ]
    return "\n".join(lines) + "\n"


def _rel(p: Path) -> str:
    """A path for the reports: relative to the repository when inside it (no machine paths)."""
    try:
        return p.absolute().relative_to(REPO).as_posix()
    except ValueError:
        return p.name


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help=f"LoCoMo dev folder (default {DEFAULT_DATA})",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="output folder (default benchmarks/results/locomo)",
    )
    ap.add_argument("--convs", default="", help="conversations, e.g. 0-3 or 1,2 (default all)")
    ap.add_argument(
        "--embedder",
        default="hash",
        help="the embedder ocb's brains are built with (ocb init --embedder; default hash)",
    )
    ap.add_argument(
        "--only",
        action="append",
        choices=list(GROUPS),
        help="run only this system (repeatable; default all)",
    )
    args = ap.parse_args(argv)

    data = args.data.resolve()
    if not (data / "tools" / "evaluate.py").is_file():
        ap.error(f"{data} has no tools/evaluate.py (pass --data)")
    systems = [s for g in (args.only or list(GROUPS)) for s in GROUPS[g]]
    systems = list(dict.fromkeys(systems))
    if args.embedder != "hash":
        systems = [f"ocb-{args.embedder}" if s == "ocb" else s for s in systems]
    if any(s.startswith("ocb") for s in systems) and not ocb_bin().is_file():
        ap.error(
            f"{ocb_bin()} not found: install the project into this interpreter's "
            "environment (pip install -e .)"
        )
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)

    rows, failed = [], []
    for system in systems:
        rc, wall = run_system(system, data, out, args.convs)
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
    (out / "summary.json").write_text(
        json.dumps(
            {
                "data": data.name,
                "convs": args.convs or "all",
                "systems": rows,
                "failed": failed,
                "python": _rel(Path(sys.executable)),
                "ocb_bin": _rel(ocb_bin()),
                "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
            },
            indent=1,
        )
        + "\n"
    )
    print(md, end="")
    print(f"wrote {out / 'summary.md'} and summary.json", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
