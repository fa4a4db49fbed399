"""Brain-death recovery: a graph made > 90 % dormant is detected and the proposed
changes, applied, bring it back to routing.

A workspace of three topics is built and used for a while (outcomes on traces, learned
by the policy gradient over the edges walked, ``learning.rule`` pg); then a month passes
with no use, and maintenance decays it with a three-day half-life: almost every edge
falls below the habitual threshold and queries fire their seeds and nothing else. ``ocb
health`` reports brain death and proposes a habitual threshold under which the
strongest 30 % of the remaining positive edges route again; ``--apply`` records it as a
config event, and the same questions route again.
"""

from __future__ import annotations

from ocb.brain import Brain
from ocb.upkeep.health import check
from ocb.upkeep.maintain import maintain
from ocb_events.clock import TickClock
from sims.common import DAY_NS, Result, rebuild_equal, scratch_brain, topic_files

NAME = "brain_death"
CLAIM = "> 90 % dormant is detected; applied proposals bring routing back"
TOPICS = {
    "billing": "invoice stripe proration refund ledger subscription chargeback dunning".split(),
    "search": "elasticsearch shard reindex mapping analyzer heap replica query".split(),
    "network": "loadbalancer nginx envoy timeout retry circuitbreaker mtu peering".split(),
}
QUESTIONS = ["stripe refund invoice", "reindex a shard mapping", "envoy retry timeout"]
SETTINGS = {"learning.rule": "pg", "maintenance.half_life_days": 3.0}


def walk(brain: Brain, n: int) -> tuple[float, float]:
    """Mean fired nodes and mean seeds over ``n`` queries."""
    fired = seeds = 0
    for i in range(n):
        answer = brain.query(QUESTIONS[i % len(QUESTIONS)], top=3)
        fired += len(answer.fired)
        seeds += len(brain.trace(answer.trace_id).seeds)
    return fired / n, seeds / n


def run(quick: bool = False) -> Result:
    rounds = 6 if quick else 15
    clock = TickClock(step_ns=10**9)
    with scratch_brain(topic_files(TOPICS, 18, 4, seed=2), SETTINGS, clock=clock) as brain:
        for i in range(rounds):
            brain.learn(1.0, trace_id=brain.query(QUESTIONS[i % 3], top=3).trace_id)
        alive_fired, _ = walk(brain, 3)
        clock.advance(30 * DAY_NS)
        maintain(brain.store, ["decay"], clock=clock)
        dead_fired, dead_seeds = walk(brain, 3)
        report, _ = check(brain.store, window=3)
        detected = any(f.startswith("brain death") for f in report.findings)
        _, recs = check(brain.store, window=3, apply=True)
        back_fired, back_seeds = walk(brain, 3)
        healed, _ = check(brain.store, window=3)
        return Result(
            name=NAME,
            claim=CLAIM,
            passed=report.dormant_share > 0.9
            and detected
            and bool(recs)
            and dead_fired <= dead_seeds
            and back_fired > back_seeds,
            metrics={
                "dormant_share": report.dormant_share,
                "fired_before": alive_fired,
                "fired_dead": dead_fired,
                "fired_after_apply": back_fired,
                "dormant_share_after": healed.tiers["dormant"],
            },
            rebuild_equal=rebuild_equal(brain),
            quick=quick,
        )
