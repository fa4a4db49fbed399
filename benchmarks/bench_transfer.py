"""What the transfer rule costs a query on a ~10,000-chunk brain with 500 learned routes.

The workspace of ``bench_core.py`` (1,000 files of 10 sections, seed 7). 500 of its
generated questions are learned (one good outcome each, the first fired chunk ``used``),
then 200 other questions and the 500 learned ones are asked in process (not recorded)
under ``route`` and under ``transfer``, alternating rule by round on the same brain so
that both see the same machine load. Prints medians, p95 and the ratio, and how many of
the new questions borrowed a route (``borrowed``) or took one as a prior.

    .venv/bin/python benchmarks/bench_transfer.py            # ~1 min
    .venv/bin/python benchmarks/bench_transfer.py --files 100 --learn 100

This is a benchmark, not a test: nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_core import make_workspace  # noqa: E402

from ocb.brain import Brain  # noqa: E402
from ocb_events.clock import TickClock  # noqa: E402

RULES = ("route", "transfer")


def timed(brain: Brain, texts: list[str]) -> tuple[list[float], Counter[str]]:
    out, modes = [], Counter[str]()
    for text in texts:
        t0 = time.perf_counter()
        answer = brain.query(text, top=5, record=False)
        out.append(time.perf_counter() - t0)
        modes[answer.route_mode or "walk"] += 1
    return out, modes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=1000, help="files of 10 sections (1,000)")
    ap.add_argument("--learn", type=int, default=500, help="questions learned (500)")
    ap.add_argument("--ask", type=int, default=200, help="new questions asked (200)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds per rule (5)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        queries = make_workspace(ws, args.files, args.learn + args.ask, 7)
        texts = [q["text"] for q in queries]
        learned, new = texts[: args.learn], texts[args.learn :]
        brain, _ = Brain.init(Path(tmp) / "b", ws, clock=TickClock(), durability="none")
        with brain:
            brain.set_config("learning.rule", "transfer")
            for text in learned:
                a = brain.query(text, top=5)
                brain.learn(1.0, trace_id=a.trace_id, used=a.fired[:1], source="self")
            times: dict[tuple[str, str], list[float]] = {}
            modes: dict[str, Counter[str]] = {}
            for rnd in range(args.rounds):
                for rule in RULES if rnd % 2 == 0 else RULES[::-1]:
                    brain.set_config("learning.rule", rule)
                    for kind, batch in (("new", new), ("learned", learned)):
                        got, seen = timed(brain, batch)
                        times.setdefault((kind, rule), []).extend(got)
                        if kind == "new":
                            modes[rule] = seen
    chunks = args.files * 10
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(f"{chunks:,} chunks, {args.learn} routes learned, {args.rounds} rounds per rule\n")
    print("| questions | rule | p50 ms | p95 ms | p50 ratio transfer / route |")
    print("|---|---|---:|---:|---:|")
    for kind in ("new", "learned"):
        p50 = {r: float(np.median(times[(kind, r)])) * 1e3 for r in RULES}
        for r in RULES:
            p95 = float(np.percentile(times[(kind, r)], 95)) * 1e3
            ratio = f"{p50['transfer'] / p50['route']:.2f}" if r == "transfer" else ""
            print(f"| {kind} ({len(times[(kind, r)]) // args.rounds}) | {r} | {p50[r]:.2f} | "
                  f"{p95:.2f} | {ratio} |")  # fmt: skip
    print()
    for r in RULES:
        print(
            f"new questions under {r}: "
            + ", ".join(f"{m} {n}" for m, n in sorted(modes[r].items()))
        )


if __name__ == "__main__":
    main()
