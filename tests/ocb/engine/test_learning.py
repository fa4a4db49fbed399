"""Learning rules: the worked example of docs/design.md, and invariants of both rules."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, strategies as st

from ocb.engine.learning import decide_deltas, heuristic_deltas, pg_deltas
from ocb.engine.policy import softmax
from ocb.settings import Learning
from ocb_events.schema import STOP, Candidate, Step


def _step(
    weights: dict[str, float], chosen: str, stop: float = 0.0, hop: int = 1, node: str = "n"
) -> Step:
    cands = tuple(
        Candidate(target=t, weight=w, logit=w, tier="habitual") for t, w in sorted(weights.items())
    )
    return Step(hop=hop, node=node, candidates=cands, stop_logit=stop, chosen=chosen)


def test_policy_gradient_worked_example_from_design() -> None:
    # w = [0.5, 0.3, -0.2, STOP 0.0], tau = 1, eta = 0.1, z = +1, chosen A
    step = _step({"A": 0.5, "B": 0.3, "C": -0.2}, chosen="A")
    d = pg_deltas([step], 1.0, Learning(eta=0.1), 1.0, damping=0.3, tau=1.0, baselines={})
    assert round(d[("n", "A")], 3) == 0.066
    assert round(d[("n", "B")], 3) == -0.028
    assert round(d[("n", "C")], 3) == -0.017
    assert round(d[("n", STOP)], 3) == -0.021
    assert math.isclose(sum(d.values()), 0.0, abs_tol=1e-12)


def test_recorded_deltas_carry_rule_params_and_sorted_order() -> None:
    step = _step({"A": 0.5, "B": 0.3, "C": -0.2}, chosen="A")
    decision = decide_deltas([step], 1.0, Learning(rule="pg", eta=0.1), source="human", damping=0.3)
    deltas, params = decision.deltas, decision.params
    assert [(x.source, x.target) for x in deltas] == [
        ("n", STOP),
        ("n", "A"),
        ("n", "B"),
        ("n", "C"),
    ]
    assert params.eta == 0.1 and params.source_weight == 1.0


def test_reward_source_weights_scale_the_update() -> None:
    step = _step({"A": 0.5, "B": 0.3}, chosen="A")
    s = Learning(rule="pg")
    human = decide_deltas([step], 1.0, s, source="human", damping=0.3).deltas
    teacher = decide_deltas([step], 1.0, s, source="teacher", damping=0.3).deltas
    ratio = teacher[1].delta / human[1].delta
    assert math.isclose(ratio, s.weight_teacher / s.weight_human)


def test_heuristic_moves_only_chosen_edges() -> None:
    steps = [
        _step({"A": 0.4, "B": 0.3}, chosen="A", hop=1),
        _step({"C": 0.3}, chosen="C", hop=2, node="A"),
    ]
    d = heuristic_deltas(steps, -1.0, Learning(eta=0.1, gamma=0.5), 1.0)
    assert d == {("n", "A"): pytest.approx(-0.05), ("A", "C"): pytest.approx(-0.1)}


weights = st.dictionaries(
    st.sampled_from(list("ABCDEFG")), st.floats(-1, 1, allow_nan=False), min_size=1, max_size=6
)


@given(weights, st.floats(-1, 1, allow_nan=False), st.floats(0.1, 3.0), st.data())
def test_pg_single_step_deltas_sum_to_zero(
    w: dict[str, float], z: float, tau: float, data: st.DataObject
) -> None:
    chosen = data.draw(st.sampled_from(sorted(w) + [STOP]))
    d = pg_deltas([_step(w, chosen)], z, Learning(), 1.0, damping=1.0, tau=tau)
    assert math.isclose(sum(d.values()), 0.0, abs_tol=1e-9)
    probs = softmax([w[k] for k in sorted(w)] + [0.0], tau)
    assert math.isclose(sum(probs), 1.0)


@given(weights, st.floats(0.01, 1, allow_nan=False), st.data())
def test_positive_outcome_never_weakens_an_edge_on_the_path(
    w: dict[str, float], z: float, data: st.DataObject
) -> None:
    keys = sorted(w)
    chosen = data.draw(st.sampled_from(keys))
    # the same edge is chosen at one step and only a candidate at a later step
    steps = [_step(w, chosen, hop=1), _step(w, data.draw(st.sampled_from(keys + [STOP])), hop=2)]
    for rule in ("pg", "heuristic"):
        deltas = decide_deltas(steps, z, Learning(rule=rule), source="human", damping=0.3).deltas
        on_path = [x.delta for x in deltas if (x.source, x.target) == ("n", chosen)]
        assert all(v >= 0 for v in on_path)


def test_the_gradient_uses_the_temperature_of_the_policy_that_acted() -> None:
    step = _step({"A": 0.5, "B": 0.3}, chosen="A")
    s = Learning(rule="pg")
    got = decide_deltas([step], 1.0, s, source="human", damping=0.3, tau=0.5)
    cold, params = got.deltas, got.params
    warm = decide_deltas([step], 1.0, s, source="human", damping=0.3, tau=2.0).deltas
    probs = softmax([0.5, 0.3, 0.0], 0.5)
    assert params.tau == 0.5
    assert cold[1].delta == pytest.approx(0.1 * (1 - probs[0]) / 0.5)
    assert cold[1].delta > warm[1].delta
