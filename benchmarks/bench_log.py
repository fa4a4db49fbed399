"""What the log's integrity costs: appends, opening a log, verifying it, and a cold
``ocb query``. Runs against any checkout, so two versions are measured in one run.

    .venv/bin/python benchmarks/bench_log.py --compare /path/to/older/checkout

Each measurement runs in a fresh interpreter whose ``sys.path`` starts with the checkout
measured, on the same machine in the same run, alternating the checkouts; medians of
``--repeat`` runs are printed with the ratio new / old.

* append batched: 200,000 records in batches of 100 (one fsync per batch);
* append one by one: 2,000 records, one fsync each;
* open: a reader opening a log of 200,000 records (16 MiB segments: the last segment's
  crc check and the seals of the full ones), median of 20 opens;
* verify: ``verify_log`` of that log (every frame, checksum and, new, the chain);
* cold query: ``ocb query`` as a fresh process on a brain of the example workspace.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from ocb_events.log import SegmentLog, verify_log
from ocb_events.schema import ConfigChanged

what, directory = sys.argv[2], Path(sys.argv[3])
batch = [ConfigChanged(key=f"k{i}", value="x" * 200) for i in range(100)]
if what == "append_batched":
    t = time.perf_counter()
    with SegmentLog(directory) as log:
        for _ in range(2000):
            log.append(batch, actor="bench")
    n = 200_000
elif what == "append_single":
    t = time.perf_counter()
    with SegmentLog(directory) as log:
        for i in range(2000):
            log.append(batch[:1], actor="bench")
    n = 2000
elif what == "open":
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        SegmentLog(directory, writer=False).close()
        times.append(time.perf_counter() - t0)
    print(json.dumps({"s": sorted(times)[len(times) // 2], "n": 1}))
    raise SystemExit
else:
    t = time.perf_counter()
    verify_log(directory)
    n = 200_000
print(json.dumps({"s": time.perf_counter() - t, "n": n}))
"""


def _run(checkout: Path, what: str, directory: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(checkout), what, str(directory)],
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(out.stdout)
    return float(got["s"]) / float(got["n"])


def _cold_query(checkout: Path, brain: Path) -> float:
    code = (
        f"import sys, time; sys.path.insert(0, {str(checkout)!r}); t = time.perf_counter(); "
        "sys.argv = ['ocb', 'query', 'how do I roll back a bad deploy', '--brain', "
        f"{str(brain)!r}]; from ocb.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(time.perf_counter() - t, file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stderr.strip().splitlines()[-1])


def _brain(checkout: Path, root: Path) -> Path:
    brain = root / f"brain-{checkout.name}"
    code = (
        f"import sys; sys.path.insert(0, {str(checkout)!r}); from ocb.brain import Brain\n"
        f"b, _ = Brain.init({str(brain)!r}, {str(REPO / 'examples' / 'workspace')!r})\n"
        "b.close()"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return brain


def measure(checkouts: list[Path], repeat: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, list[float]]] = {str(c): {} for c in checkouts}
    with tempfile.TemporaryDirectory(prefix="ocb-bench-log-") as tmp:
        root = Path(tmp)
        brains = {c: _brain(c, root) for c in checkouts}
        for _ in range(repeat):
            for c in checkouts:
                res = out[str(c)]
                for what in ("append_batched", "append_single"):
                    d = root / "log"
                    shutil.rmtree(d, ignore_errors=True)
                    res.setdefault(what, []).append(_run(c, what, d))
                d = root / "big"
                shutil.rmtree(d, ignore_errors=True)
                _run(c, "append_batched", d)
                res.setdefault("open", []).append(_run(c, "open", d))
                res.setdefault("verify", []).append(_run(c, "verify", d))
                res.setdefault("cold_query", []).append(_cold_query(c, brains[c]))
    return {c: {k: statistics.median(v) for k, v in r.items()} for c, r in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compare", type=Path, help="an older checkout to measure beside this one")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    checkouts = [REPO] + ([a.compare.resolve()] if a.compare else [])
    med = measure(checkouts, a.repeat)
    new = med[str(REPO)]
    old = med.get(str(a.compare.resolve())) if a.compare else None
    rows = [
        ("append batched (us/record)", "append_batched", 1e6),
        ("append one by one (us/record)", "append_single", 1e6),
        ("open a 200k-record log (ms)", "open", 1e3),
        ("verify_log (us/record)", "verify", 1e6),
        ("cold ocb query (ms)", "cold_query", 1e3),
    ]
    print(f"{'':34} {'this':>10}" + (f" {'older':>10} {'ratio':>7}" if old else ""))
    for label, key, scale in rows:
        line = f"{label:34} {new[key] * scale:>10.2f}"
        if old:
            line += f" {old[key] * scale:>10.2f} {new[key] / old[key]:>7.2f}"
        print(line)
    result = {"this": new, "older": old, "repeat": a.repeat}
    (REPO / "benchmarks" / "results").mkdir(exist_ok=True)
    (REPO / "benchmarks" / "results" / "log.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
