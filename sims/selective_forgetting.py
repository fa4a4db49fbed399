"""Selective forgetting: after a focused workload >= 90 % of edges are dormant and the
used ones are reflex.

Three topics share one workspace (eight files each). A focused workload asks three
questions about one topic, over and over, and scores every trace +1; each ten queries a
day passes and maintenance decays the graph with a two-day half-life. The routes those
questions use are reinforced faster than they decay; every edge the workload never
uses, in all three topics, fades into the dormant tier, where it is kept (and can
recover) but no longer routes. Learning is the policy gradient over the edges walked
(``learning.rule`` pg); reward baselines are off, as in context reduction, and
the learning rate is 0.3 so that three reinforcements a day outpace the decay.
"""

from __future__ import annotations

from ocb.engine.policy import tier_of
from ocb.upkeep.maintain import maintain
from ocb_events.clock import TickClock
from ocb_events.schema import STOP
from sims.common import DAY_NS, Result, rebuild_equal, scratch_brain, topic_files

NAME = "selective_forgetting"
CLAIM = ">= 90 % of edges dormant after a focused workload; the used ones reflex"
TOPICS = {
    "billing": "invoice stripe proration refund ledger subscription chargeback dunning".split(),
    "search": "elasticsearch shard reindex mapping analyzer heap replica query".split(),
    "network": "loadbalancer nginx envoy timeout retry circuitbreaker mtu peering".split(),
}
QUESTIONS = ["stripe refund on an invoice", "proration of a subscription", "chargeback dunning"]
SETTINGS = {
    "traversal.max_seeds": 1,
    "maintenance.half_life_days": 2.0,
    "learning.rule": "pg",
    "learning.baseline_rate": 0.0,
    "learning.eta": 0.3,
}


def run(quick: bool = False) -> Result:
    queries = 60 if quick else 120
    clock = TickClock(step_ns=10**9)
    with scratch_brain(topic_files(TOPICS, 24, 4, seed=9), SETTINGS, clock=clock) as brain:
        dormant: list[float] = []
        used: set[tuple[str, str]] = set()
        for i in range(queries):
            if i and i % 10 == 0:
                clock.advance(DAY_NS)
                maintain(brain.store, ["decay"], clock=clock)
            answer = brain.query(QUESTIONS[i % len(QUESTIONS)], top=3)
            brain.learn(1.0, trace_id=answer.trace_id)
            if i >= queries - 10:
                steps = brain.trace(answer.trace_id).steps
                used |= {(st.node, st.chosen) for st in steps if st.chosen != STOP}
            trav = brain.store.settings()[0]
            tiers = [
                tier_of(e.weight, trav) for ts in brain.graph.out.values() for e in ts.values()
            ]
            dormant.append(tiers.count("dormant") / len(tiers))
        g = brain.graph
        used_w = [g.out[a][b].weight for a, b in sorted(used) if b in g.out.get(a, {})]
        return Result(
            name=NAME,
            claim=CLAIM,
            passed=dormant[-1] >= 0.9 and bool(used_w) and min(used_w) >= 0.6,
            metrics={
                "dormant_share": dormant[-1],
                "used_edges": len(used_w),
                "min_used_weight": min(used_w) if used_w else 0.0,
                "edges": g.edge_count(),
            },
            series={"dormant_share": dormant},
            rebuild_equal=rebuild_equal(brain),
            quick=quick,
        )
