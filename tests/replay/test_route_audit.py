"""What routes taught is explained: ``audit node`` lists each route credit a chunk got,
with the route's question and the outcome (or retraction) that caused it, and each
firing says which route it followed and how (its own, or borrowed from another
question); the same in ``memory_why``'s JSON and in SQL (``route_credits``)."""

from __future__ import annotations

from ocb.brain import Brain
from ocb.cli.render.audit import node_text
from ocb.wire import node_json

TRAINED = "how do I roll back a bad deploy of build 1234"
OTHER = "how do I roll back a bad deploy of build 1240"


def _teach(brain: Brain) -> tuple[str, int]:
    brain.set_config("learning.rule", "transfer")
    answer = brain.query(TRAINED, top=10)
    used = [f for f in answer.fired if f.startswith("runbooks/rollback.md")][:1]
    report = brain.learn(1.0, trace_id=answer.trace_id, used=used, source="self")
    return used[0], report.outcome_seq


def test_a_route_credit_is_listed_with_its_question_and_its_outcome(brain: Brain) -> None:
    node, outcome_seq = _teach(brain)
    borrowed = brain.query(OTHER, top=10)
    assert borrowed.route_mode == "borrowed" and borrowed.fired == [node]
    audit = brain.audit_node(node)
    credit = next(c for c in audit.routes if c.cause_seq == outcome_seq)
    assert credit.delta == 1.0 and credit.question == TRAINED
    assert credit.cause == "outcome" and credit.source == "self" and credit.reward == 1.0
    latest = audit.recent[0]
    assert (latest.query, latest.route, latest.route_mode) == (OTHER, credit.route, "borrowed")
    text = node_text(audit)
    assert f'route {credit.route} "{TRAINED}"  +1.000  by outcome seq {outcome_seq}' in text
    assert f"borrowed route {credit.route}" in text
    assert node_json(audit)["routes"][0]["question"] == TRAINED


def test_a_retraction_shows_as_the_cause_of_the_credit_it_takes_back(brain: Brain) -> None:
    node, outcome_seq = _teach(brain)
    retracted = brain.retract(seq=outcome_seq)
    audit = brain.audit_node(node)
    back = [c for c in audit.routes if c.cause == "retraction"]
    assert back and back[-1].delta == -1.0 and back[-1].cause_seq == retracted.seq
    assert sum(c.delta for c in audit.routes) == 0.0


def test_route_credits_are_a_table_of_the_history(brain: Brain) -> None:
    node, outcome_seq = _teach(brain)
    got = brain.sql(
        "SELECT route_id, question, node, delta, cause_seq FROM route_credits "
        f"WHERE node = '{node}'"
    )
    assert [tuple(r) for r in got.rows] == [
        (got.rows[0][0], TRAINED, node, 1.0, outcome_seq),
    ]
    traces = brain.sql("SELECT query, route, route_mode FROM traces ORDER BY seq DESC LIMIT 1")
    assert tuple(traces.rows[0])[0] == TRAINED
