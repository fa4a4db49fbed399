"""Noise robustness: with 0-20 % wrong outcomes the correct route still ends reflex;
the noise level where it stops doing so is reported.

The workspace holds a four-step database restore runbook among unrelated notes. As in
``deploy_pipeline`` the forward edges between steps are set to 0.4 and the backward
ones to 0.2; the correct route is the three forward hops. The agent asks for the first
step and every answer deserves +1, but each outcome is flipped to -1 with the noise
probability (seeded per level and run). For each noise level (0, 5, 10, 15, 20, 25,
30, 35, 40, 50 %) several fresh brains run the workload; the route ends reflex at a
level when every route edge is >= 0.6 after the last query in every run. The breaking
point is the first level where some run ends below. A flipped outcome can dip the route
below reflex for a query or two, so the worst run's share of queries in the second half
whose route is reflex is reported per level too. Settings: one seed, policy-gradient
learning (``learning.rule`` pg) with its defaults (eta 0.1, gamma 0.9, reward baselines).
"""

from __future__ import annotations

import random

from sims.common import Result, connect, paragraphs, rebuild_equal, scratch_brain, weight

NAME = "noise_robustness"
CLAIM = "with 0-20 % wrong outcomes the correct route stays reflex"
STEPS = [
    "Stop the writers and take the database offline.",
    "Fetch the latest snapshot from the backup bucket.",
    "Restore the snapshot and replay the write-ahead log.",
    "Run the consistency checks and reopen the writers.",
]
FILLER = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()
SETTINGS = {"traversal.max_seeds": 1, "learning.rule": "pg"}
LEVELS = [0, 5, 10, 15, 20, 25, 30, 35, 40, 50]
IDS = [f"runbooks/restore.md::{i}" for i in range(len(STEPS) + 1)]
ROUTE = list(zip(IDS[1:], IDS[2:], strict=False))


def workspace() -> dict[str, str]:
    steps = "\n\n".join(f"## Step {i + 1}\n\n{body}" for i, body in enumerate(STEPS))
    files = {"runbooks/restore.md": f"# Restore\n\nBringing a database back.\n\n{steps}\n"}
    for i, text in enumerate(paragraphs(FILLER, 10, seed=3)):
        files[f"notes/n{i:02d}.md"] = f"# Note {i}\n\n{text}\n"
    return files


def noisy_run(level: int, run_no: int, queries: int) -> tuple[list[float], int, bool]:
    """Route-min weight per query, the number of flipped outcomes, the rebuild check."""
    rng = random.Random(1000 * run_no + level)
    with scratch_brain(workspace(), SETTINGS) as brain:
        back = [(b, a, 0.2) for a, b in zip(IDS, IDS[1:], strict=False)]
        connect(brain, [(a, b, 0.4) for a, b in ROUTE] + back)
        route_min: list[float] = []
        flipped = 0
        for _ in range(queries):
            answer = brain.query("stop the writers and take the database offline", top=3)
            wrong = rng.random() < level / 100
            flipped += wrong
            brain.learn(-1.0 if wrong else 1.0, trace_id=answer.trace_id)
            route_min.append(min(weight(brain, a, b) for a, b in ROUTE))
        return route_min, flipped, rebuild_equal(brain)


def run(quick: bool = False) -> Result:
    runs, queries = (2, 60) if quick else (8, 60)
    final_min: dict[int, float] = {}
    late_share: dict[int, float] = {}  # the worst run's share of reflex routes, 2nd half
    series: dict[str, list[float]] = {}
    rebuilt = True
    flips = 0
    for level in LEVELS:
        ends, shares = [], []
        for run_no in range(runs):
            route_min, flipped, ok = noisy_run(level, run_no, queries)
            ends.append(route_min[-1])
            late = route_min[queries // 2 :]
            shares.append(sum(w >= 0.6 for w in late) / len(late))
            rebuilt, flips = rebuilt and ok, flips + flipped
            if run_no == 0 and level in (0, 10, 20, 30, 50):
                series[f"{level:02d} % noise: route min"] = route_min
        final_min[level], late_share[level] = min(ends), min(shares)
    holds = all(final_min[level] >= 0.6 for level in LEVELS if level <= 20)
    breaking = next((level for level in LEVELS if final_min[level] < 0.6), None)
    return Result(
        name=NAME,
        claim=CLAIM,
        passed=holds,
        metrics={
            "breaking_point_pct": breaking,
            "min_final_at_20pct": final_min[20],
            "reflex_share_2nd_half_at_20pct": late_share[20],
            "min_final_at_0pct": final_min[0],
            "runs_per_level": runs,
            "queries_per_run": queries,
            "flipped_outcomes": flips,
            "min_final_by_level": {str(k): round(v, 4) for k, v in final_min.items()},
            "reflex_share_2nd_half_by_level": {str(k): round(v, 3) for k, v in late_share.items()},
        },
        series=series,
        rebuild_equal=rebuilt,
        quick=quick,
        detail="" if breaking is None else f"the route first ends below reflex at {breaking} %",
    )
