"""Deploy pipeline: a 4-hop procedural chain reaches the reflex tier (>= 0.9) within 10
repeated queries and stays there.

The workspace holds a deploy runbook of five steps (build, stage, smoke, canary,
promote) among unrelated notes. A procedure is read forwards, so the scenario sets the
forward edges between steps to 0.4 and the backward ones to 0.2. The agent asks for the
build step, its traversal walks the chain, and every answer is scored +1 (a human
outcome on the recorded trace). Settings: one seed, up to 6 hops, policy gradient
(``learning.rule`` pg) with eta 0.3 and no discount (every step of a procedure matters
equally).
"""

from __future__ import annotations

from sims.common import Result, connect, paragraphs, rebuild_equal, scratch_brain, weight

NAME = "deploy_pipeline"
CLAIM = "a 4-hop chain reaches >= 0.9 within 10 queries and stays"
STEPS = [
    ("Build", "Build the release artifact with make release and tag the image with the commit."),
    ("Stage", "Push the image to staging and run the migrations against the staging database."),
    ("Smoke", "Run the smoke suite against staging and read every failing check before moving on."),
    (
        "Canary",
        "Send five percent of traffic to the canary pods and watch errors for thirty minutes.",
    ),
    ("Promote", "Promote the canary to every production pod and announce the release."),
]
SETTINGS = {
    "traversal.max_seeds": 1,
    "traversal.max_hops": 6,
    "learning.rule": "pg",
    "learning.eta": 0.3,
    "learning.gamma": 1.0,
}
FILLER = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()


def workspace() -> dict[str, str]:
    steps = "\n\n".join(f"## Step {i + 1}: {t}\n\n{body}" for i, (t, body) in enumerate(STEPS))
    files = {"runbooks/deploy.md": f"# Deploy pipeline\n\nHow a release ships.\n\n{steps}\n"}
    for i, text in enumerate(paragraphs(FILLER, 12, seed=3)):
        files[f"notes/n{i:02d}.md"] = f"# Note {i}\n\n{text}\n"
    return files


def run(quick: bool = False) -> Result:
    queries = 12 if quick else 20
    with scratch_brain(workspace(), SETTINGS) as brain:
        ids = [f"runbooks/deploy.md::{i}" for i in range(len(STEPS) + 1)]
        chain = list(zip(ids[1:], ids[2:], strict=False))  # step 1 -> 2 -> 3 -> 4 -> 5
        connect(
            brain,
            [(a, b, 0.4) for a, b in chain]
            + [(b, a, 0.2) for a, b in zip(ids, ids[1:], strict=False)],
        )
        series: dict[str, list[float]] = {f"step{i + 1}->step{i + 2}": [] for i in range(4)}
        reached = None
        for q in range(1, queries + 1):
            answer = brain.query("build the release artifact", top=3)
            brain.learn(1.0, trace_id=answer.trace_id)
            ws = [weight(brain, a, b) for a, b in chain]
            for key, w in zip(series, ws, strict=True):
                series[key].append(w)
            if reached is None and min(ws) >= 0.9:
                reached = q
        final = [s[-1] for s in series.values()]
        stays = reached is not None and all(min(s[reached - 1 :]) >= 0.9 for s in series.values())
        return Result(
            name=NAME,
            claim=CLAIM,
            passed=reached is not None and reached <= 10 and stays,
            metrics={
                "reflex_at_query": reached,
                "min_final_weight": min(final),
                "queries": queries,
            },
            series=series,
            rebuild_equal=rebuild_equal(brain),
            quick=quick,
        )
