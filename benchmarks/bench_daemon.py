"""The live brain: cold ``ocb query`` through the daemon against in-process, query and
learn under concurrent clients, the time from a file save to an answer that has it, a
1,000-file burst, and the daemon's idle footprint, on a ~10,000-chunk workspace.

    .venv/bin/python benchmarks/bench_daemon.py                 # ~10k chunks
    .venv/bin/python benchmarks/bench_daemon.py --files 100     # quick

Everything is measured in one run on this machine; the table gives medians (p50) and
p95 in milliseconds. This is a benchmark, not a test: nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from bench_core import make_workspace  # noqa: E402
from live_support import ENV, init, ocb, pct, served  # noqa: E402

from ocb.daemon.protocol import call, connect  # noqa: E402


def timed(cmd: list[str], n: int) -> list[float]:
    subprocess.run(cmd, env=ENV, capture_output=True, check=True)  # warm the .pyc files
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=ENV, capture_output=True, check=True)
        out.append(time.perf_counter() - t0)
    return out


def rpc_loop(brain: Path, queries: list[str], lat: list[float], learn: bool = False) -> None:
    sock = connect(brain, timeout=120)
    assert sock is not None
    with sock:
        reader = sock.makefile("rb")
        for q in queries:
            t0 = time.perf_counter()
            ans = call(sock, "query", {"text": q, "top": 5}, reader=reader)
            if learn:
                call(sock, "learn", {"outcome": 1.0, "trace_id": ans["trace_id"]}, reader=reader)
            lat.append(time.perf_counter() - t0)


def clients(brain: Path, n: int, queries: list[str], *, learn: bool) -> tuple[list[float], float]:
    lats: list[list[float]] = [[] for _ in range(n)]
    threads = [
        threading.Thread(target=rpc_loop, args=(brain, queries[i::n], lats[i], learn))
        for i in range(n)
    ]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [x for ls in lats for x in ls], time.perf_counter() - t0


def status(brain: Path) -> dict[str, Any]:
    sock = connect(brain, timeout=60)
    assert sock is not None
    with sock:
        got: dict[str, Any] = call(sock, "status")
        return got


def answered(brain: Path, word: str) -> bool:
    sock = connect(brain, timeout=60)
    assert sock is not None
    with sock:
        ans = call(sock, "query", {"text": word, "top": 3, "record": False})
    return any(word in h["text"] for h in ans["results"])


def save_to_answer(brain: Path, ws: Path, n: int) -> list[float]:
    target = sorted((ws / "notes").glob("*.md"))[0]
    out = []
    for i in range(n):
        word = f"quokkazebra{i}x"
        t0 = time.perf_counter()
        with target.open("a", encoding="utf-8") as f:
            f.write(f"\n\n## Saved {i}\n\nThe {word} note was saved.\n")
        while not answered(brain, word):
            time.sleep(0.01)
        out.append(time.perf_counter() - t0)
    return out


def burst(brain: Path, ws: Path, n: int) -> tuple[float, int]:
    before = status(brain)
    t0 = time.perf_counter()
    d = ws / "burst"
    d.mkdir()
    for i in range(n):
        (d / f"b{i:04d}.md").write_text(f"# Burst {i}\n\nburst file {i} about widgets.\n")
    want = before["watched_files"] + n
    while status(brain)["watched_files"] < want:
        time.sleep(0.02)
    took = time.perf_counter() - t0
    time.sleep(1.0)  # the last sync is counted once its flush is done
    return took, status(brain)["syncs"] - before["syncs"]


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def only_save(files: int, saves: int) -> None:
    """Build, serve, and time ``saves`` file saves to an answer (nothing else)."""
    root = Path(tempfile.mkdtemp(prefix="ocb-daemon-"))
    try:
        ws, brain = root / "ws", root / "brain"
        ws.mkdir()
        make_workspace(ws, files, 400, seed=7)
        init(ws, brain)
        with served(brain):
            xs = save_to_answer(brain, ws, saves)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"file save -> answered by a query: {pct(xs)} ms (max {max(xs) * 1000:.0f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=1000, help="files of 10 sections each")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--saves", type=int, default=10, help="file saves timed to an answer")
    ap.add_argument("--only-save", action="store_true", help="time the saves alone")
    a = ap.parse_args()
    if a.only_save:
        only_save(a.files, a.saves)
        return
    root = Path(tempfile.mkdtemp(prefix="ocb-daemon-"))
    rows: list[tuple[str, str]] = []
    try:
        ws, brain = root / "ws", root / "brain"
        ws.mkdir()
        qs = [q["text"] for q in make_workspace(ws, a.files, 400, seed=7)]
        init(ws, brain)
        q = ["query", qs[0], "--brain", str(brain)]
        rows.append(
            ("python -c pass (fresh process)", pct(timed([sys.executable, "-c", "pass"], a.repeat)))
        )
        rows.append(
            (
                "cold ocb query, in-process (--no-daemon)",
                pct(timed(ocb(*q, "--no-daemon"), a.repeat)),
            )
        )
        with served(brain) as proc:
            rows.append(("cold ocb query through the daemon", pct(timed(ocb(*q), a.repeat * 2))))
            one: list[float] = []
            rpc_loop(brain, qs[:200], one)
            rows.append(("query in the daemon, 1 client (round trip)", pct(one)))
            many, _ = clients(brain, 8, qs[:400], learn=False)
            rows.append(("query in the daemon, 8 clients", pct(many)))
            s0 = status(brain)
            pairs, took = clients(brain, 8, qs[:400], learn=True)
            s1 = status(brain)
            writes = s1["writes"] - s0["writes"]
            rows.append(("query + learn, 8 clients (per pair)", pct(pairs)))
            per_flush = writes / max(1, s1["groups"] - s0["groups"])
            rate = f"{writes / took:.0f} writes/s, {per_flush:.1f} per flush"
            rows.append(("learn + query writes/s, 8 clients (group commit)", rate))
            rows.append(
                ("file save -> answered by a query", pct(save_to_answer(brain, ws, a.saves)))
            )
            b_took, b_syncs = burst(brain, ws, 1000)
            rows.append(
                ("1,000-file burst -> all indexed", f"{b_took * 1000:.0f} ms in {b_syncs} sync(s)")
            )
            time.sleep(2)
            c0, t0 = cpu_s(proc.pid), time.perf_counter()
            time.sleep(10)
            idle = (cpu_s(proc.pid) - c0) / (time.perf_counter() - t0) * 100
            st = status(brain)
            rows.append(
                ("daemon idle: RSS / CPU", f"{st['rss_bytes'] / 2**20:.0f} MiB / {idle:.2f} %")
            )
            nodes = st["watched_files"]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}; {a.files} files ({nodes} after the burst), "
          f"~{a.files * 10} chunks; {time.strftime('%Y-%m-%d')}")  # fmt: skip
    print("\n| measure | p50 / p95 ms (or as stated) |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
