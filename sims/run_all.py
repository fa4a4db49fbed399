"""Run every simulation, print the summary table, exit non-zero if a claim fails.

python -m sims.run_all            # the full runs; JSON (+ PNG) in sims/results/
python -m sims.run_all --quick    # reduced runs, in seconds; in sims/results/quick/
python -m sims.run_all --only deploy_pipeline,negation
python -m sims.run_all --quick --out /tmp/sims    # results anywhere

Only full runs write the committed sims/results/*.json: a quick run's numbers are not
the published ones, so they go to sims/results/quick/ (ignored by git) unless --out
says otherwise.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

from sims.common import Result, save

SIMULATIONS = [
    "deploy_pipeline",
    "negation",
    "context_reduction",
    "selective_forgetting",
    "edge_damping",
    "domain_separation",
    "brain_death",
    "individuation",
    "pg_vs_heuristic",
    "noise_robustness",
    "static_vs_learning",
    "scaling",
    "mistake_recurrence",
]


def run(names: list[str], quick: bool, out: Path | None) -> list[tuple[Result, float]]:
    """Run the named simulations in order; each result is saved under ``out`` (by
    default where ``save`` puts a full or a quick run)."""
    done = []
    for name in names:
        module = importlib.import_module(f"sims.{name}")
        t0 = time.perf_counter()
        result: Result = module.run(quick=quick)
        seconds = time.perf_counter() - t0
        save(result, out)
        done.append((result, seconds))
        status = "ok" if result.passed and result.rebuild_equal else "FAILED"
        print(f"{status:6} {name} ({seconds:.2f} s)", file=sys.stderr, flush=True)
    return done


def table(done: list[tuple[Result, float]]) -> str:
    """The Markdown summary: claim, verdict, key numbers, rebuild check, time."""
    lines = [
        "| simulation | claim | holds | rebuild = live | key numbers | s |",
        "|---|---|---|---|---|---:|",
    ]
    for r, seconds in done:
        nums = ", ".join(f"{k} {_fmt(v)}" for k, v in list(r.metrics.items())[:4])
        lines.append(
            f"| {r.name} | {r.claim} | {'yes' if r.passed else 'NO'} | "
            f"{'yes' if r.rebuild_equal else 'NO'} | {nums} | {seconds:.2f} |"
        )
    return "\n".join(lines)


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="reduced runs of every simulation")
    ap.add_argument("--only", default="", help="comma-separated simulation names")
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where results go (default: sims/results; sims/results/quick with --quick)",
    )
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or SIMULATIONS
    unknown = sorted(set(names) - set(SIMULATIONS))
    if unknown:
        print(f"error: unknown simulation(s): {', '.join(unknown)}", file=sys.stderr)
        print(f"hint: choose from {', '.join(SIMULATIONS)}", file=sys.stderr)
        return 2
    done = run(names, args.quick, args.out)
    print(table(done))
    failed = [r.name for r, _ in done if not (r.passed and r.rebuild_equal)]
    if failed:
        print(f"\nclaims that do not hold: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
