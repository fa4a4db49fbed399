"""Negation: under negative outcomes a deprecated path's edge falls below -0.9 while the
good edge stays reflex.

A hotfix question leads from its guidance chunk to two follow-ups: the current rule
(never skip CI; reflex, 0.7) and the withdrawn one (skip CI for urgent fixes; habitual,
0.5). Each round the agent asks the question, scores its trace +1, and reports the
withdrawn advice as wrong by scoring the path guidance -> withdrawn -1 (``learn
--fired-ids``). Once the withdrawn edge is inhibitory it vetoes its target: the advice
stops firing at all. Learning is the policy gradient over the edges walked
(``learning.rule`` pg).
"""

from __future__ import annotations

from sims.common import Result, connect, rebuild_equal, scratch_brain, weight

NAME = "negation"
CLAIM = "a deprecated edge falls below -0.9; the good edge stays reflex"
FILES = {
    "runbooks/hotfix.md": "# Hotfix\n\nUrgent hotfix guidance: which checks apply first.\n",
    "memory/current.md": "# Current rule\n\nNever skip continuous integration for fixes.\n",
    "memory/withdrawn.md": "# Withdrawn rule\n\nSkipping the pipeline was once allowed.\n",
}
GUIDE, GOOD, OLD = "runbooks/hotfix.md::0", "memory/current.md::0", "memory/withdrawn.md::0"
SETTINGS = {"traversal.max_seeds": 1, "indexing.similar_k": 0, "learning.rule": "pg"}


def run(quick: bool = False) -> Result:
    rounds = 25 if quick else 40
    with scratch_brain(FILES, SETTINGS) as brain:
        connect(brain, [(GUIDE, GOOD, 0.7), (GUIDE, OLD, 0.5)])
        series: dict[str, list[float]] = {"good": [], "deprecated": []}
        old_fired: list[bool] = []
        for _ in range(rounds):
            answer = brain.query("urgent hotfix guidance checks", top=3)
            old_fired.append(OLD in answer.fired)
            brain.learn(1.0, trace_id=answer.trace_id)
            brain.learn(-1.0, fired_ids=[GUIDE, OLD])
            series["good"].append(weight(brain, GUIDE, GOOD))
            series["deprecated"].append(weight(brain, GUIDE, OLD))
        below = next((i + 1 for i, w in enumerate(series["deprecated"]) if w < -0.9), None)
        good_min = min(series["good"])
        return Result(
            name=NAME,
            claim=CLAIM,
            passed=below is not None and good_min >= 0.6 and not any(old_fired[-5:]),
            metrics={
                "below_-0.9_at_round": below,
                "final_deprecated": series["deprecated"][-1],
                "min_good": good_min,
                "deprecated_fired_last_5": sum(old_fired[-5:]),
            },
            series=series,
            rebuild_equal=rebuild_equal(brain),
            quick=quick,
        )
