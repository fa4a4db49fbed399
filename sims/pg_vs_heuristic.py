"""PG versus heuristic: both rules compile the same route to reflex, but the policy
gradient keeps less total edge mass and weaker distractors.

The workspace holds an incident runbook of four steps among unrelated notes. As in
``deploy_pipeline`` the forward edges between steps are set to 0.4 and the backward
ones to 0.2; each step also has a tempting side edge (0.35) to a note. The agent asks
for the first step and scores every answer +1 (a human outcome on the recorded trace).
Two brains run the same workload, one with ``learning.rule`` pg and one with
heuristic; otherwise one seed and default learning. The route is three hops: with the
side edges spreading activation, a fourth habitual hop would pass its target less than
``traversal.fire_threshold``, the policy would STOP there, and rewarding that STOP
pushes the edge dormant under pg (heuristic leaves it), so neither rule would converge.

Converged: every route edge is reflex (>= 0.6). Total edge mass: the sum of the
positive weights of all edges. Distractors: the edges out of route nodes that are not
on the route.
"""

from __future__ import annotations

from ocb.brain import Brain
from sims.common import Result, connect, paragraphs, rebuild_equal, scratch_brain, weight

NAME = "pg_vs_heuristic"
CLAIM = "both converge; PG keeps lower edge mass and distractor weights"
STEPS = [
    "Page the on-call lead and open the incident channel.",
    "Freeze deploys and note the time of the first alert.",
    "Check the error budget dashboard of the failing service.",
    "Roll back the last release when it is the cause.",
]
FILLER = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()
SETTINGS = {"traversal.max_seeds": 1}
IDS = [f"runbooks/incident.md::{i}" for i in range(len(STEPS) + 1)]
ROUTE = list(zip(IDS[1:], IDS[2:], strict=False))


def workspace() -> dict[str, str]:
    steps = "\n\n".join(f"## Step {i + 1}\n\n{body}" for i, body in enumerate(STEPS))
    files = {"runbooks/incident.md": f"# Incident response\n\nWhen production breaks.\n\n{steps}\n"}
    for i, text in enumerate(paragraphs(FILLER, 10, seed=3)):
        files[f"notes/n{i:02d}.md"] = f"# Note {i}\n\n{text}\n"
    return files


def mass_and_distractors(brain: Brain) -> tuple[float, float]:
    g = brain.graph
    mass = sum(e.weight for ts in g.out.values() for e in ts.values() if e.weight > 0)
    on_route = {a for a, _ in ROUTE}
    dis = [e.weight for a in sorted(on_route) for b, e in g.out[a].items() if (a, b) not in ROUTE]
    return mass, sum(dis) / len(dis)


def train(rule: str, queries: int) -> tuple[dict[str, list[float]], int | None, bool]:
    with scratch_brain(workspace(), {**SETTINGS, "learning.rule": rule}) as brain:
        side = [(IDS[i + 1], f"notes/n{i:02d}.md::0", 0.35) for i in range(len(STEPS))]
        back = [(b, a, 0.2) for a, b in zip(IDS, IDS[1:], strict=False)]
        connect(brain, [(a, b, 0.4) for a, b in ROUTE] + back + side)
        series: dict[str, list[float]] = {"route min": [], "distractor mean": [], "mass": []}
        converged = None
        for q in range(1, queries + 1):
            answer = brain.query("page the on-call lead", top=3)
            brain.learn(1.0, trace_id=answer.trace_id)
            route_min = min(weight(brain, a, b) for a, b in ROUTE)
            mass, dis = mass_and_distractors(brain)
            for key, v in zip(series, (route_min, dis, mass), strict=True):
                series[key].append(v)
            if converged is None and route_min >= 0.6:
                converged = q
        return series, converged, rebuild_equal(brain)


def run(quick: bool = False) -> Result:
    queries = 15 if quick else 40
    pg, pg_at, pg_ok = train("pg", queries)
    hr, hr_at, hr_ok = train("heuristic", queries)
    stays = all(min(s["route min"][at - 1 :]) >= 0.6 for s, at in ((pg, pg_at), (hr, hr_at)) if at)
    return Result(
        name=NAME,
        claim=CLAIM,
        passed=pg_at is not None
        and hr_at is not None
        and stays
        and pg["mass"][-1] < hr["mass"][-1]
        and pg["distractor mean"][-1] < hr["distractor mean"][-1],
        metrics={
            "pg_mass": pg["mass"][-1],
            "heuristic_mass": hr["mass"][-1],
            "pg_distractor_mean": pg["distractor mean"][-1],
            "heuristic_distractor_mean": hr["distractor mean"][-1],
            "pg_reflex_at_query": pg_at,
            "heuristic_reflex_at_query": hr_at,
            "pg_route_min": pg["route min"][-1],
            "heuristic_route_min": hr["route min"][-1],
            "queries": queries,
        },
        series={
            f"{rule} {key}": s[key]
            for rule, s in (("pg", pg), ("heuristic", hr))
            for key in ("route min", "distractor mean")
        },
        rebuild_equal=pg_ok and hr_ok,
        quick=quick,
    )
