"""The learned route mode: training from recorded traces, recording, and routing."""

from __future__ import annotations

import numpy as np
import pytest

from ocb.brain import Brain
from ocb.checks.brain import run_doctor
from ocb.cli.render.upkeep import train_text
from ocb.engine.route_model import FEATURES, Examples, fit, load_scorer
from ocb.graph.route import train
from ocb_events.errors import InputError
from ocb_events.schema import RouteModelTrained
from replay import PROJECTIONS, rebuild
from replay.verify import WARN

QUESTIONS = [
    "how do I roll back a bad deploy",
    "can we skip CI for an urgent hotfix",
    "what is the postgres connection pool size",
    "who is on call this week",
]


def test_fit_separates_a_separable_set_deterministically() -> None:
    rng = np.random.default_rng(7)
    ex = Examples()
    for _ in range(200):
        row = [float(rng.uniform(0, 1)), 0.0, float(rng.uniform(-1, 1)), 0.0, 1.0]
        ex.add(row, 1.0 if row[2] > 0 else 0.0, 1.0)
    weights, accuracy = fit(ex)
    again, _ = fit(ex)
    assert accuracy > 0.95 and weights[2] > 0 and np.array_equal(weights, again)


def test_training_needs_labelled_decisions(brain: Brain) -> None:
    brain.query(QUESTIONS[0])
    seq = brain.log.last_seq
    with pytest.raises(InputError, match="labelled decision"):
        train(brain.store)
    assert brain.log.last_seq == seq


def test_a_trained_model_is_recorded_and_used_by_the_learned_mode(brain: Brain) -> None:
    warnings: list[str] = []
    brain.warn = warnings.append
    fallback = brain.trace(brain.query(QUESTIONS[0], mode="learned").trace_id)
    assert fallback.params.mode == "edge+sim" and "no route model" in warnings[0]
    for i in range(12):
        answer = brain.query(QUESTIONS[i % len(QUESTIONS)])
        brain.learn(1.0 if i % 3 else -1.0, trace_id=answer.trace_id)
    report = train(brain.store)
    assert report.examples >= 20 and report.features == list(FEATURES)
    rec = next(brain.log.read(report.seq))
    assert isinstance(rec.event, RouteModelTrained)
    scorer = load_scorer(brain.store.blobs.get(rec.event.blob, verify=True))
    assert list(scorer.weights) == pytest.approx(report.weights)
    trace = brain.trace(brain.query(QUESTIONS[0], mode="learned", visit_penalty=0.0).trace_id)
    assert trace.params.mode == "learned"
    index = brain.store.search_index()
    cos = np.maximum(index.cosine(brain.store.embedder().embed([trace.query])[0]), 0.0)
    for st in trace.steps:
        for c in st.candidates:
            eff = c.weight * trace.params.damping**c.uses
            relevance = brain.graph.out[st.node][c.target].relevance
            expected = scorer(eff, relevance, cos[index.pos[c.target]], cos[index.pos[st.node]])
            assert c.logit == pytest.approx(expected, abs=1e-5)
    assert brain.graph.route_model is not None and brain.graph.route_model.seq == report.seq
    full = rebuild(brain.log)
    assert PROJECTIONS["graph"].snapshot(full["graph"]) == PROJECTIONS["graph"].snapshot(
        brain.graph
    )


def test_a_model_identical_to_the_one_in_force_is_not_recorded_again(brain: Brain) -> None:
    for i in range(8):
        answer = brain.query(QUESTIONS[i % 4])
        brain.learn(1.0 if i % 3 else -1.0, trace_id=answer.trace_id, rule="pg")
    first = train(brain.store)
    brain.query(QUESTIONS[0])  # a trace without an outcome teaches nothing new
    seq = brain.log.last_seq
    again = train(brain.store)
    assert brain.log.last_seq == seq and (again.recorded, again.seq) == (False, first.seq)
    assert again.weights == first.weights
    assert train_text(again).startswith(
        f"route model unchanged: {first.examples} labelled decisions train the model recorded "
        f"at seq {first.seq}; nothing recorded"
    )
    model = brain.graph.route_model
    assert model is not None
    brain.store.blobs.path(model.blob).unlink()  # a lost model blob: routing falls back ...
    warnings: list[str] = []
    brain.warn = warnings.append
    assert brain.route_scorer() is None and "is missing); routing with edge+sim" in warnings[0]
    (blobs,) = [c for c in run_doctor(brain.path) if c.name == "blobs"]
    assert blobs.status == WARN and "fix: ocb train-route" in blobs.detail
    assert not train(brain.store).recorded and brain.store.blobs.get(
        model.blob, verify=True
    )  # ... back
    assert brain.log.last_seq == seq
    brain.learn(1.0, trace_id=brain.query(QUESTIONS[1]).trace_id, rule="pg")
    assert train(brain.store).recorded
