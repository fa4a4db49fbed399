"""The route rule: a repeated question compiles into the chunks its answers needed, a
miss explores, a changed chunk is re-checked, learning for one question leaves the
others alone (under ``transfer`` too), and bad ``used`` ids are refused with nothing
recorded. The brains here are pinned to ``route`` (``transfer``, the default, is
``test_transfer.py``)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given, strategies as st

from ocb.brain import Brain
from ocb.engine import routes
from ocb.engine.routes import find_route, legacy_key, route_key
from ocb.whatif import scratch_replay
from ocb_events.clock import TickClock
from ocb_events.errors import InputError
from ocb_events.schema import EdgesUpdated, RouteUpdated
from replay import PROJECTIONS, snapshot_bytes
from tests.ocb.support import QUESTIONS, VOCAB

ROLLBACK = QUESTIONS[0]


@pytest.fixture
def brain(brain: Brain) -> Brain:
    brain.set_config("learning.rule", "route")
    return brain


def test_a_good_answer_with_used_ids_compiles_the_route_to_exactly_those(brain: Brain) -> None:
    cold = brain.query(ROLLBACK, top=10)
    assert len(cold.fired) > 2
    used = [cold.fired[1]]
    report = brain.learn(1.0, trace_id=cold.trace_id, used=used, source="self")
    assert report.rule == "route" and report.route and report.deltas == []
    assert report.credits[used[0]] == 1.0
    again = brain.query(ROLLBACK, top=10)
    assert again.fired == used
    assert brain.trace(again.trace_id).route == report.route
    assert brain.trace(again.trace_id).route_mode == "compiled"
    assert again.context_chars < cold.context_chars
    assert not any(isinstance(r.event, EdgesUpdated) for r in brain.log.read())


def test_scalar_successes_halve_the_context_down_to_one_chunk(brain: Brain) -> None:
    sizes = []
    for _ in range(8):
        answer = brain.query(ROLLBACK, top=10)
        sizes.append(len(answer.fired))
        brain.learn(1.0, trace_id=answer.trace_id, source="self")
    n = sizes[0]
    expected = [n]
    while expected[-1] > 1:
        expected.append((expected[-1] + 1) // 2)
    assert sizes[: len(expected)] == expected
    assert sizes[len(expected) :] == [1] * (8 - len(expected))


def test_a_miss_vetoes_its_context_and_the_next_answer_explores_untried_chunks(
    brain: Brain,
) -> None:
    brain.set_config("routes.explore", 2)
    cold = brain.query(ROLLBACK, top=20)
    brain.learn(-1.0, trace_id=cold.trace_id, source="self")
    nxt = brain.query(ROLLBACK, top=20)
    assert brain.trace(nxt.trace_id).route_mode == "explore"
    assert len(nxt.fired) == 2
    assert not set(nxt.fired) & set(cold.fired)
    assert not {h.id for h in nxt.results} & set(cold.fired)  # vetoed: not even a result
    # an explored chunk that answers is kept; the route fires it from then on
    brain.learn(1.0, trace_id=nxt.trace_id, used=nxt.fired[:1], source="self")
    assert brain.query(ROLLBACK, top=20).fired == nxt.fired[:1]


def test_a_spent_route_fires_nothing_until_the_workspace_changes(
    brain: Brain, workspace: Path
) -> None:
    brain.set_config("routes.explore_limit", 2)
    for _ in range(2):
        answer = brain.query(ROLLBACK)
        brain.learn(-1.0, trace_id=answer.trace_id, source="self")
    spent = brain.query(ROLLBACK)
    assert spent.fired == [] and spent.context == ""
    assert brain.trace(spent.trace_id).route_mode == "spent"
    assert spent.results  # the next-best matches are still returned
    (workspace / "runbooks" / "rollback-notes.md").write_text(
        "# Rollback notes\n\nTo roll back a bad deploy, redeploy the previous tag.\n"
    )
    brain.sync(workspace)
    fresh = brain.query(ROLLBACK)
    assert brain.trace(fresh.trace_id).route_mode == "explore" and fresh.fired


def test_a_compiled_chunk_whose_text_changed_is_rechecked_not_followed(
    brain: Brain, workspace: Path
) -> None:
    cold = brain.query(ROLLBACK, top=10)
    used = cold.fired[0]
    brain.learn(1.0, trace_id=cold.trace_id, used=[used], source="self")
    assert brain.query(ROLLBACK).fired == [used]
    node = brain.graph.nodes[used]
    path = workspace / node.path
    path.write_text(path.read_text().replace(node.text.splitlines()[-1], "Rewritten entirely."))
    brain.sync(workspace)
    after = brain.query(ROLLBACK, top=10)
    assert brain.trace(after.trace_id).route_mode != "compiled"


def test_a_retracted_outcome_takes_its_route_credits_back(brain: Brain) -> None:
    cold = brain.query(ROLLBACK, top=10)
    brain.learn(1.0, trace_id=cold.trace_id, used=cold.fired[:1], source="self")
    report = brain.retract(trace_id=cold.trace_id)
    assert {m.target for m in report.credits} == set(cold.fired)
    assert all(m.after == 0.0 for m in report.credits)
    assert brain.query(ROLLBACK, top=10).fired == cold.fired


def test_a_route_recorded_before_porter2_is_still_followed_and_still_learns(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "how do we tune postgres"
    assert route_key(question) == "postgr tune" and legacy_key(question) == "postgre tune"
    with monkeypatch.context() as old_release:  # keyed the way a release before Porter2 did
        old_release.setattr(routes, "route_key", legacy_key)
        cold = brain.query(question, top=10)
        first = brain.learn(1.0, trace_id=cold.trace_id, used=cold.fired[:1], source="self")
    recorded = [r.event for r in brain.log.read() if isinstance(r.event, RouteUpdated)]
    assert [ev.key for ev in recorded] == ["postgre tune"]
    again = brain.query(question, top=10)
    assert brain.trace(again.trace_id).route == first.route
    assert brain.trace(again.trace_id).route_mode == "compiled"
    assert again.fired == cold.fired[:1]
    later = brain.learn(-1.0, trace_id=again.trace_id, source="self")
    assert later.route == first.route
    updates = [r.event for r in brain.log.read() if isinstance(r.event, RouteUpdated)]
    assert [ev.route_id for ev in updates] == [first.route] * 2


def test_a_reworded_question_finds_a_route_recorded_before_porter2_by_its_old_terms(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    brain.set_config("routes.match", 0.6)
    with monkeypatch.context() as old_release:
        old_release.setattr(routes, "route_key", legacy_key)
        cold = brain.query("how do we tune postgres", top=10)
        first = brain.learn(1.0, trace_id=cold.trace_id, used=cold.fired[:1], source="self")
    reworded = "tune postgres settings"  # Porter2 "postgr set tune", before "postgre setting tune"
    assert find_route(brain.state("routes"), [route_key(reworded)], 0.6) == ""
    answer = brain.query(reworded, top=10)
    assert brain.trace(answer.trace_id).route == first.route
    assert answer.fired == cold.fired[:1]


def test_used_ids_that_did_not_fire_or_do_not_exist_are_named_and_nothing_is_recorded(
    brain: Brain,
) -> None:
    answer = brain.query(ROLLBACK, top=10)
    idle = sorted(set(brain.graph.nodes) - set(answer.fired))[:2]
    before = brain.log.last_seq
    cases = [
        (dict(used=idle), f"did not fire in trace {answer.trace_id}: {', '.join(idle)}"),
        (dict(used=["no-such-node"]), "no-such-node"),
        (dict(used=answer.fired[:1], outcome=-1.0), "the outcome is not positive"),
        (dict(used=answer.fired[:1], fired_ids=answer.fired[:2]), "`used` goes with a trace"),
    ]
    for kw, message in cases:
        outcome = float(kw.pop("outcome", 1.0))  # type: ignore[arg-type]
        args = {"trace_id": answer.trace_id} if "fired_ids" not in kw else {}
        with pytest.raises(InputError) as info:
            brain.learn(outcome, **args, **kw)  # type: ignore[arg-type]
        assert message in info.value.message
        assert brain.log.last_seq == before


# --------------------------------------------------------------------------- properties

FIRST, SECOND = VOCAB[: len(VOCAB) // 2], VOCAB[len(VOCAB) // 2 :]
texts = st.lists(st.sampled_from(VOCAB), min_size=4, max_size=10).map(" ".join)
files = st.lists(st.lists(texts, min_size=2, max_size=4), min_size=2, max_size=3)
outcomes = st.lists(
    st.tuples(st.sampled_from([-1.0, 1.0]), st.sampled_from(["none", "first", "all"])),
    min_size=1,
    max_size=6,
)


def _brain(tmp: str, sections: list[list[str]], rule: str = "route") -> Brain:
    ws = Path(tmp) / "ws"
    ws.mkdir()
    for i, secs in enumerate(sections):
        body = "".join(f"## Part {j}\n\n{t}.\n\n" for j, t in enumerate(secs))
        (ws / f"note{i}.md").write_text(f"# Note {i}\n\n{body}")
    brain, _ = Brain.init(Path(tmp) / "brain", ws, clock=TickClock(), durability="none")
    brain.set_config("learning.rule", rule)
    return brain


def _learn(brain: Brain, question: str, reward: float, pick: str) -> list[str]:
    answer = brain.query(question, top=10)
    used: list[str] = []
    if reward > 0 and answer.fired and pick != "none":
        used = answer.fired[:1] if pick == "first" else answer.fired
    brain.learn(reward, trace_id=answer.trace_id, used=used, source="self")
    return used


@given(files, st.lists(st.sampled_from(FIRST), min_size=2, max_size=4), outcomes)
def test_a_good_answer_never_loses_a_chunk_it_used(
    sections: list[list[str]], words: list[str], history: list[tuple[float, str]]
) -> None:
    question = " ".join(words)
    with tempfile.TemporaryDirectory() as tmp, _brain(tmp, sections) as brain:
        for reward, pick in history:
            used = _learn(brain, question, reward, pick)
            if used:
                assert set(used) <= set(brain.query(question, top=10).fired)


@given(
    files,
    st.lists(st.sampled_from(FIRST), min_size=2, max_size=4),
    st.lists(st.sampled_from(SECOND), min_size=2, max_size=4),
    outcomes,
)
@pytest.mark.parametrize("rule", ["route", "transfer"])
def test_learning_for_one_question_leaves_an_unrelated_question_as_it_was(
    rule: str,
    sections: list[list[str]],
    a: list[str],
    b: list[str],
    history: list[tuple[float, str]],
) -> None:
    mine, other = " ".join(a), " ".join(b)
    with tempfile.TemporaryDirectory() as tmp, _brain(tmp, sections, rule) as brain:
        before = brain.query(other, top=10, record=False)
        for reward, pick in history:
            _learn(brain, mine, reward, pick)
        after = brain.query(other, top=10, record=False)
        assert after.fired == before.fired
        assert [h.id for h in after.results] == [h.id for h in before.results]


@given(files, st.lists(st.sampled_from(VOCAB), min_size=2, max_size=4), outcomes)
@pytest.mark.parametrize("rule", ["route", "transfer"])
def test_route_learning_is_deterministic_and_what_if_reproduces_it_exactly(
    rule: str, sections: list[list[str]], words: list[str], history: list[tuple[float, str]]
) -> None:
    question = " ".join(words)
    logs = []
    with tempfile.TemporaryDirectory() as tmp:
        for run in ("a", "b"):
            (Path(tmp) / run).mkdir()
            with _brain(str(Path(tmp) / run), sections, rule) as brain:
                for reward, pick in history:
                    _learn(brain, question, reward, pick)
                logs.append([(r.seq, r.ts, r.actor, r.event) for r in brain.log.read()])
        assert logs[0][1:] == logs[1][1:]  # the first record names each run's workspace
        with Brain(Path(tmp) / "a" / "brain", writer=False) as real:
            routed = sum(isinstance(r.event, RouteUpdated) for r in real.log.read())
            event(f"route updates: {min(routed, 3)}")
            with scratch_replay(real.store, 0) as r:
                assert list(r.brain.log.read()) == list(real.log.read())
                for name in sorted(PROJECTIONS):
                    assert snapshot_bytes(name, r.brain.state(name)) == snapshot_bytes(
                        name, real.state(name)
                    )
