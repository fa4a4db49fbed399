"""Reading the records of some types out of a long log (``ocb events --type``, the
window's confidence moves): a type that is not there (every record read) and the first
1,000 of a type near the start. Prints a Markdown table; medians of ``--repeat`` runs.

    .venv/bin/python benchmarks/bench_events.py --brain /tmp/ui1m/brain-pg

(a brain of ``bench_history.py`` or ``bench_ui.py --keep``). This is a benchmark, not a
test: nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ocb.brain import Brain  # noqa: E402

CASES = {
    "every record read for a type that is not there": (["kg_fact_set"], 1000),
    "the first 1,000 of a type near the start": (["outcome_recorded"], 1000),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--brain", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    times: dict[str, list[float]] = {name: [] for name in CASES}
    with Brain(args.brain, writer=False) as b:
        last = b.log.last_seq
        for _ in range(args.repeat):
            for name, (types, limit) in CASES.items():
                t0 = time.perf_counter()
                sum(1 for _ in b.events(types=types, limit=limit))
                times[name].append(time.perf_counter() - t0)
    print(f"| {last:,} events | median, s | runs, s |")
    print("|---|---:|---|")
    for name, got in times.items():
        print(f"| {name} | {statistics.median(got):.2f} | "
              + ", ".join(f"{t:.2f}" for t in got) + " |")  # fmt: skip


if __name__ == "__main__":
    main()
