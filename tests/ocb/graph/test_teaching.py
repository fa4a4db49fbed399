"""Teacher labels: from files and callbacks to recorded policy-gradient updates."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from ocb.brain import Brain
from ocb.engine.policy import softmax
from ocb.graph.teach import DecisionPoint, teach, teach_with
from ocb_events.errors import InputError
from ocb_events.schema import EdgeRelevanceSet, EdgesUpdated, TeacherLabeled

QUESTION = "how do I roll back a bad deploy"


def log_bytes(brain: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((brain / "log").glob("*.seg")))


def first_decision(brain: Brain) -> tuple[str, str, str, list[str]]:
    trace = brain.trace(brain.query(QUESTION).trace_id)
    st = next(s for s in trace.steps if len(s.candidates) >= 2)
    return trace.trace_id, st.node, st.candidates[-1].target, [c.target for c in st.candidates]


def test_a_dry_run_shows_the_deltas_and_records_nothing(brain: Brain) -> None:
    tid, node, target, _ = first_decision(brain)
    before = log_bytes(brain.path)
    line = json.dumps({"trace_id": tid, "node": node, "chosen": [target]})
    report = teach(brain.store, [line])
    assert report.labels == 1 and not report.applied
    assert any(d.source == node and d.target == target and d.delta > 0 for d in report.deltas)
    assert log_bytes(brain.path) == before


def test_applied_labels_record_the_label_then_its_update_at_the_teacher_weight(
    brain: Brain,
) -> None:
    tid, node, target, _ = first_decision(brain)
    trace = brain.trace(tid)
    st = next(s for s in trace.steps if s.node == node)
    w0 = brain.graph.out[node][target].weight
    line = json.dumps({"trace_id": tid, "node": node, "scores": {target: 0.5}})
    report = teach(brain.store, [line], apply=True, relevance=True)
    recs = list(brain.log.read(report.first_seq))
    assert isinstance(recs[0].event, TeacherLabeled) and recs[0].event.scores == (0.5,)
    assert isinstance(recs[1].event, EdgesUpdated) and recs[1].event.cause_seq == recs[0].seq
    assert recs[1].event.rule == "teacher"
    assert isinstance(recs[2].event, EdgeRelevanceSet)
    probs = softmax([c.logit for c in st.candidates] + [st.stop_logit], trace.params.tau)
    p = probs[[c.target for c in st.candidates].index(target)]
    expected = 0.1 * 0.5 * 0.1 * (1 - p) / trace.params.tau  # eta * score * teacher * (1 - p)
    edge = brain.graph.out[node][target]
    assert edge.weight - w0 == pytest.approx(expected)
    assert edge.relevance == 0.5


def test_relevance_raises_the_edge_in_the_edge_route_mode(brain: Brain) -> None:
    tid, node, target, _ = first_decision(brain)
    line = json.dumps({"trace_id": tid, "node": node, "scores": {target: 1.0}})
    teach(brain.store, [line], apply=True, relevance=True)
    trace = brain.trace(brain.query(QUESTION, visit_penalty=0.0).trace_id)
    st = next((s for s in trace.steps if s.node == node), None)
    assert st is not None and trace.params.mode == "edge"
    cand = next(c for c in st.candidates if c.target == target)
    assert cand.logit == pytest.approx(cand.weight * trace.params.damping**cand.uses + 1.0)


def test_malformed_label_lines_are_reported_by_number_and_nothing_is_recorded(
    brain: Brain,
) -> None:
    tid, node, target, _ = first_decision(brain)
    before = log_bytes(brain.path)
    lines = [
        json.dumps({"trace_id": tid, "node": node, "chosen": [target]}),
        "{not json",
        json.dumps({"trace_id": "t99999", "node": node, "chosen": [target]}),
        json.dumps({"trace_id": tid, "node": node, "scores": {target: 3}}),
    ]
    with pytest.raises(InputError, match=r"3 malformed label line\(s\): line 2: not JSON") as exc:
        teach(brain.store, lines, apply=True)
    assert "line 3: unknown trace id" in exc.value.message
    assert "line 4: score of" in exc.value.message
    assert log_bytes(brain.path) == before


def test_a_callback_teacher_is_asked_every_decision_and_failures_are_skipped(
    brain: Brain,
) -> None:
    tid = brain.query(QUESTION).trace_id
    points = len(brain.trace(tid).steps)
    assert points >= 3
    warnings: list[str] = []
    brain.warn = warnings.append
    release = threading.Event()
    seen: list[DecisionPoint] = []

    def teacher(dp: DecisionPoint) -> object:
        seen.append(dp)
        if len(seen) == 1:
            raise RuntimeError("teacher offline")
        if len(seen) == 2:
            release.wait()  # hangs until the test lets it go
        return [min(c.target for c in dp.candidates)]

    try:
        report = teach_with(brain.store, teacher, trace_ids=[tid], timeout_s=0.2, apply=True)
    finally:
        release.set()
    assert len(seen) == points and report.labels == points - 2
    assert any("teacher offline" in w for w in warnings)
    assert any("timed out" in w for w in warnings)
    labels = [
        r.event for r in brain.log.read(report.first_seq) if isinstance(r.event, TeacherLabeled)
    ]
    assert [lab.teacher for lab in labels] == ["callback"] * (points - 2)


def test_a_teacher_answer_outside_the_candidates_or_range_is_ignored(brain: Brain) -> None:
    tid = brain.query(QUESTION).trace_id
    warnings: list[str] = []
    brain.warn = warnings.append
    report = teach_with(brain.store, lambda dp: {"nowhere.md::0": 0.5}, trace_ids=[tid])
    assert report.labels == 0 and warnings and "is not a candidate" in warnings[0]
    report = teach_with(brain.store, lambda dp: {dp.candidates[0].target: 2.0}, trace_ids=[tid])
    assert report.labels == 0 and "outside [-1, 1]" in warnings[-1]
