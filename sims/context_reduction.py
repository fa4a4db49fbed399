"""Context reduction: nodes fired per query fall from about 30 on the first query to
<= 3 on average over the last 10 of 100 focused queries, the answer chunk still fired.

A dense workspace of twelve Postgres runbooks (six sections each, one shared
vocabulary, so similar chunks are joined across files). One focused question is asked
100 times. Its first walk fans out: one seed, up to 30 fired nodes, a low fire
threshold and a wide branch. The agent reports the path it actually used, seed ->
answer (a chunk in another file that the seed links to), with +1 (``learn
--fired-ids``); every ten queries a day passes and maintenance decays the graph with
a one-day half-life. The used route is reinforced faster than it decays; everything
else falls dormant and stops firing. The reward baselines are off (``baseline_rate``
0): with a constant reward they would cancel the reinforcement the route needs to
outlast decay.
"""

from __future__ import annotations

from ocb.upkeep.maintain import maintain
from ocb_events.clock import TickClock
from sims.common import DAY_NS, Result, rebuild_equal, scratch_brain, topic_files, weight

NAME = "context_reduction"
CLAIM = "fired nodes fall from ~30 to <= 3 (last 10 of 100), answer still fired"
WORDS = "vacuum autovacuum replica replication wal pgbouncer bloat deadlock patroni index "
TOPICS = {"postgres": (WORDS + "checkpoint lag").split()}
QUESTION = "replication lag on the replica"
SETTINGS = {
    "traversal.max_seeds": 1,
    "traversal.max_fired": 30,
    "traversal.fire_threshold": 0.005,
    "traversal.branch": 10,
    "traversal.max_hops": 3,
    "maintenance.half_life_days": 1.0,
    "learning.baseline_rate": 0.0,
}


def run(quick: bool = False) -> Result:
    queries = 60 if quick else 100
    clock = TickClock(step_ns=10**9)
    with scratch_brain(topic_files(TOPICS, 12, 6, seed=5), SETTINGS, clock=clock) as brain:
        first = brain.query(QUESTION, top=5)
        seed = brain.trace(first.trace_id).seeds[0].node_id
        here = brain.graph.nodes[seed].path
        answer = min(t for t in brain.graph.out[seed] if brain.graph.nodes[t].path != here)
        fired: list[float] = [float(len(first.fired))]
        answered: list[bool] = [answer in first.fired]
        route: list[float] = []
        for i in range(1, queries):
            if i % 10 == 0:
                clock.advance(DAY_NS)
                maintain(brain.store, ["decay"], clock=clock)
            got = brain.query(QUESTION, top=5)
            fired.append(float(len(got.fired)))
            answered.append(answer in got.fired)
            brain.learn(1.0, fired_ids=[seed, answer])
            route.append(weight(brain, seed, answer))
        last = fired[-10:]
        mean_last = sum(last) / len(last)
        return Result(
            name=NAME,
            claim=CLAIM,
            passed=fired[0] >= 25 and mean_last <= 3 and all(answered[-10:]),
            metrics={
                "fired_first": fired[0],
                "fired_last10_mean": mean_last,
                "answer_fired_last10": sum(answered[-10:]),
                "queries": queries,
            },
            series={"fired": fired, "route_weight": route},
            rebuild_equal=rebuild_equal(brain),
            quick=quick,
        )
