"""Chunk cap benchmark: ``ocb init`` of a workspace holding one 10 MB single-line file,
then one ``ocb query`` on it: wall time and peak RSS of each process, the chunks
indexed and the size of the query's context.

Each ``--ocb`` executable (for example this checkout's and an older one's) runs in
fresh processes on the same generated file (seeded words, one line, no newline
inside); peak RSS is the child's ``ru_maxrss`` from ``os.wait4``.

    .venv/bin/python benchmarks/bench_chunk_cap.py --ocb .venv/bin/ocb --ocb /old/.venv/bin/ocb

This is a benchmark, not a test: nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_core import machine

HERE = Path(__file__).resolve().parent
QUESTION = "rollback the canary deploy"


def make_file(path: Path, size: int, seed: int = 7) -> None:
    """``size`` characters of seeded words on one line."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choices(letters, k=rng.randint(2, 10))) for _ in range(5000)]
    vocab[:4] = ["rollback", "deploy", "canary", "incident"]
    out: list[str] = []
    n = 0
    while n < size:
        w = rng.choice(vocab)
        out.append(w)
        n += len(w) + 1
    path.write_text(" ".join(out)[:size] + "\n", encoding="utf-8")


def run(cmd: list[str]) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds, peak RSS in MiB and stdout of one process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024, out


def measure(ocb: str, ws: Path, brain: Path, size: int) -> dict[str, Any]:
    """Index the big file and query it: the brain is made first on the workspace's
    small note, with ``indexing.max_file_bytes`` raised above the file's size where the
    executable knows the setting (a newer one skips larger files); then the measured
    ``ocb init`` indexes the big file."""
    big = ws / "big.md"
    hidden = ws.parent / f"{ws.name}-big.md"
    big.rename(hidden)
    subprocess.run([ocb, "init", "--workspace", str(ws), "--brain", str(brain)],
                   capture_output=True, check=True)  # fmt: skip
    subprocess.run([ocb, "config", "--brain", str(brain), "indexing.max_file_bytes",
                    str(2 * size + 1024)], capture_output=True)  # fmt: skip
    hidden.rename(big)
    wall, cpu, rss, out = run(
        [ocb, "init", "--workspace", str(ws), "--brain", str(brain), "--json"]
    )
    report = json.loads(out)
    q_wall, q_cpu, q_rss, q_out = run([ocb, "query", QUESTION, "--brain", str(brain), "--json"])
    answer = json.loads(q_out)
    return {
        "ocb": ocb,
        "init_s": round(wall, 2),
        "init_cpu_s": round(cpu, 2),
        "init_peak_rss_mib": rss,
        "chunks": report.get("nodes"),
        "query_s": round(q_wall, 2),
        "query_cpu_s": round(q_cpu, 2),
        "query_peak_rss_mib": q_rss,
        "context_chars": len(answer["context"]),
        "results_text_chars": sum(len(r["text"]) for r in answer["results"]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ocb", action="append", default=[], help="ocb executable (repeatable)")
    ap.add_argument("--size", type=int, default=10_000_000, help="characters in the line")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "chunk_cap.json")
    args = ap.parse_args()
    exes = args.ocb or [str(Path(sys.executable).with_name("ocb"))]
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        make_file(ws / "big.md", args.size)
        (ws / "note.md").write_text("# Note\n\nA small note beside the big file.\n")
        rows = [measure(exe, ws, Path(tmp) / f"brain-{i}", args.size) for i, exe in enumerate(exes)]
    result = {"machine": machine(), "size_chars": args.size, "runs": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["machine"]))
    print("| ocb | init s (CPU s) | init peak RSS MiB | chunks | query s | context chars |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['ocb']} | {r['init_s']} ({r['init_cpu_s']}) | {r['init_peak_rss_mib']} "
            f"| {r['chunks']} | {r['query_s']} | {r['context_chars']:,} |"
        )


if __name__ == "__main__":
    main()
