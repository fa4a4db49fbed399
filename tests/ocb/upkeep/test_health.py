"""Health and autotune: detecting brain death and saturated context, and fixing them."""

from __future__ import annotations

import pytest

from ocb.brain import Brain
from ocb.settings import Traversal
from ocb.upkeep.health import assess, check
from ocb_events.schema import ConfigChanged, QueryTraced, SeedHit
from tests.ocb.graphs import build
from tests.ocb.support import dormant_update
from tests.projections.streams import PARAMS

QUESTION = "how do I roll back a bad deploy"


def test_a_fresh_brain_is_healthy_and_proposes_nothing(brain: Brain) -> None:
    for _ in range(3):
        brain.query(QUESTION)
    report, recs = check(brain.store, apply=True)
    assert report.window == 3 and report.avg_fired > report.avg_seeds
    assert report.findings == [] and report.proposals == [] and recs == []
    assert abs(sum(report.tiers.values()) - 1.0) < 1e-9


def test_brain_death_is_detected_and_the_applied_proposal_routes_again(brain: Brain) -> None:
    brain.store.record([dormant_update(brain)], "maintenance", expected_seq=brain.log.last_seq)
    dead = brain.query(QUESTION)
    report, _ = check(
        brain.store,
    )
    assert report.dormant_share > 0.9 and report.findings[0].startswith("brain death")
    assert [p.key for p in report.proposals] == ["traversal.habitual"]
    report, recs = check(brain.store, apply=True)
    assert [type(r.event) for r in recs] == [ConfigChanged]
    assert brain.store.settings()[0].habitual == report.proposals[0].proposed
    alive = brain.query(QUESTION)
    assert len(alive.fired) > len(dead.fired)
    healed, _ = check(
        brain.store,
    )
    assert healed.dormant_share < 0.9


def test_saturated_context_proposes_a_higher_fire_threshold() -> None:
    nodes = {f"n{i}": "x" for i in range(40)}
    g = build(nodes, [("n0", f"n{i}", 0.3) for i in range(1, 40)])
    s = Traversal(max_fired=10)

    trace = QueryTraced(
        trace_id="t1",
        query="x",
        seeds=(SeedHit(node_id="n0", score=1.0),),
        steps=(),
        fired=tuple(f"n{i}" for i in range(10)),
        stop_reason="max_fired",
        context_chars=10,
        params=PARAMS,
    )
    report = assess(g, [trace] * 5, s)
    assert report.findings == ["saturated context: 10.0 of 10 nodes fire"]
    assert report.proposals[0].key == "traversal.fire_threshold"
    assert report.proposals[0].proposed == pytest.approx(s.fire_threshold * 1.5)
