"""Cold start: a fresh ``ocb query`` process on a brain of the example workspace, and
what it imports. Runs against any checkout, so two versions are measured in one run.

    .venv/bin/python benchmarks/bench_cold.py --compare /path/to/older/checkout --repeat 15

Each run is a fresh interpreter whose ``sys.path`` starts with the checkout measured
(``python -c "from ocb.cli import main; main()" query ...``), alternating the
checkouts; the table gives the median wall time and the number of modules the process
had imported when it answered (``sys.modules`` at exit), with the ratio new / old.
Each checkout queries a brain it built itself (the log format may differ).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUESTION = "how do I roll back a bad deploy"
COUNT = (
    "import atexit, sys; "
    "atexit.register(lambda: print(len(sys.modules), file=sys.stderr)); "
    "from ocb.cli import main; main()"
)


def run(checkout: Path, args: list[str], *, count: bool = False) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "OPENBLAS_NUM_THREADS": "1"}
    code = COUNT if count else "from ocb.cli import main; main()"
    start = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=checkout, env=env, capture_output=True, text=True
    )
    took = time.perf_counter() - start
    if p.returncode != 0:
        raise SystemExit(f"{checkout}: {' '.join(args)} failed: {p.stderr[-500:]}")
    return took, p.stderr.strip().splitlines()[-1] if count else ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compare", type=Path, help="an older checkout to measure beside this one")
    ap.add_argument("--repeat", type=int, default=15)
    a = ap.parse_args()
    checkouts = [REPO] + ([a.compare.resolve()] if a.compare else [])
    root = Path(tempfile.mkdtemp(prefix="ocb-cold-"))
    try:
        brains = {}
        for i, c in enumerate(checkouts):
            ws = root / f"ws{i}"
            shutil.copytree(REPO / "examples" / "workspace", ws)
            brains[c] = root / f"brain{i}"
            run(c, ["init", "--workspace", str(ws), "--brain", str(brains[c])])
        times: dict[Path, list[float]] = {c: [] for c in checkouts}
        modules: dict[Path, int] = {}
        for _ in range(a.repeat):
            for c in checkouts:
                took, _ = run(c, ["query", QUESTION, "--brain", str(brains[c])])
                times[c].append(took)
        for c in checkouts:
            _, n = run(c, ["query", QUESTION, "--brain", str(brains[c])], count=True)
            modules[c] = int(n)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    med = {c: statistics.median(t) * 1000 for c, t in times.items()}
    print(f"{'':34}{'this':>10}{'older':>10}{'ratio':>8}")
    rows = [("cold ocb query (ms, median)", med), ("modules imported", modules)]
    for name, vals in rows:
        this = vals[REPO]
        line = f"{name:34}{this:>10.1f}"
        if a.compare:
            old = vals[checkouts[1]]
            line += f"{old:>10.1f}{this / old:>8.2f}"
        print(line)


if __name__ == "__main__":
    main()
