"""Individuation: the same starting graph, used by two agents with different work,
ends with many edges whose weights differ by more than 0.05.

Two brains are built from one workspace of four topics (databases, frontend, billing,
networking; twelve files of four sections) with the same clock, so their graphs start
byte for byte equal (compared without the scratch workspace path, the one thing that
differs). The first agent asks about databases and frontend and is always satisfied
(+1); the second asks about frontend and billing and rejects a third of its answers
(-1, seeded). Both score the recorded traces as a human. The edges touched are those
either workload's outcomes changed. Default settings throughout, but for the learning
rule: the policy gradient over the edges walked (``learning.rule`` pg).
"""

from __future__ import annotations

import random
from contextlib import ExitStack

from ocb.brain import Brain
from replay import PROJECTIONS
from sims.common import Result, rebuild_equal, scratch_brain, topic_files

NAME = "individuation"
CLAIM = "one starting graph, two workloads: many edges end > 0.05 apart"
SETTINGS = {"learning.rule": "pg"}
TOPICS = {
    "database": "postgres vacuum replica replication wal btree planner transaction deadlock "
    "pgbouncer backup snapshot restore schema migration bloat checkpoint".split(),
    "frontend": "css grid flexbox typography font kerning palette contrast button modal "
    "layout spacing component breakpoint icon animation theme".split(),
    "billing": "invoice stripe proration refund ledger subscription chargeback dunning "
    "webhook coupon tax receipt payout currency trial plan".split(),
    "network": "loadbalancer nginx envoy timeout retry circuitbreaker mtu vpc peering dns "
    "resolver firewall subnet gateway latency packet".split(),
}
Key = tuple[str, str]
WORKLOADS = {"first": (("database", "frontend"), 0.0), "second": (("frontend", "billing"), 1 / 3)}


def graph_bytes(brain: Brain) -> bytes:
    """The graph snapshot without the workspace root (each scratch brain has its own)."""
    proj = PROJECTIONS["graph"]
    copy = proj.restore(proj.snapshot(brain.graph))
    copy.workspace = ""
    return bytes(proj.snapshot(copy))


def work(brain: Brain, topics: tuple[str, ...], reject: float, queries: int) -> set[Key]:
    """Run a workload; the edges its outcomes changed."""
    rng = random.Random(11)
    touched: set[Key] = set()
    for q in range(queries):
        words = TOPICS[topics[q % len(topics)]]
        answer = brain.query(" ".join(rng.sample(words, 3)), top=3)
        outcome = -1.0 if rng.random() < reject else 1.0
        report = brain.learn(outcome, trace_id=answer.trace_id)
        touched |= {(d.source, d.target) for d in report.deltas if d.target in brain.graph.nodes}
    return touched


def edge_weights(brain: Brain) -> dict[Key, float]:
    return {(a, b): e.weight for a, ts in brain.graph.out.items() for b, e in ts.items()}


def run(quick: bool = False) -> Result:
    queries = 30 if quick else 150
    files = topic_files(TOPICS, 12, 4, seed=4)
    with ExitStack() as stack:
        brains = {k: stack.enter_context(scratch_brain(files, SETTINGS)) for k in WORKLOADS}
        equal_at_start = len({graph_bytes(b) for b in brains.values()}) == 1
        touched = {k: work(brains[k], *WORKLOADS[k], queries) for k in WORKLOADS}
        w1, w2 = (edge_weights(b) for b in brains.values())
        both = sorted(set(w1) & set(w2))
        gaps = sorted((abs(w1[k] - w2[k]) for k in both), reverse=True)
        differing = sum(g > 0.05 for g in gaps)
        either = len(touched["first"] | touched["second"])
        return Result(
            name=NAME,
            claim=CLAIM,
            passed=equal_at_start and differing >= 20 and differing >= 0.1 * either,
            metrics={
                "edges_differing_gt_0.05": differing,
                "edges_touched_by_either": either,
                "share_of_touched": round(differing / max(1, either), 3),
                "equal_at_start": equal_at_start,
                "edges_in_both": len(both),
                "touched_by_both": len(touched["first"] & touched["second"]),
                "max_difference": gaps[0] if gaps else 0.0,
                "queries_per_brain": queries,
            },
            series={"|w1 - w2| by rank": gaps[:100]},
            rebuild_equal=all(rebuild_equal(b) for b in brains.values()),
            quick=quick,
        )
