"""Retraction: outcomes, teacher labels and injections taken back exactly, both records
kept in the history, later changes left as they were, and bad requests refused with
nothing recorded."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from ocb.brain import Brain
from ocb.engine.route_model import collect_examples
from ocb.graph.teach import teach
from ocb.upkeep.maintain import maintain
from ocb.upkeep.weights import NS_PER_DAY
from ocb_events.clock import TickClock
from ocb_events.errors import InputError
from ocb_events.schema import STOP, EdgesUpdated, OutcomeRecorded, Retracted
from projections.graph import State as GraphState
from replay import PROJECTIONS, rebuild, snapshot_bytes
from replay.analytics import AnalyticsStore
from replay.audit import audit_edge

QUESTION = "how do I roll back a bad deploy"
HOTFIX = "can we skip CI for an urgent hotfix"
FIX = "Never skip CI for hotfixes"
WITHDRAWN = "memory/2026-11-10.md::6"  # the Retain bullet: skipping CI is acceptable


def values(g: GraphState) -> dict[tuple[str, str], tuple[float, float]]:
    """Every edge's (weight, relevance), stop weights, and baselines (as node -> "")."""
    out = {(s, t): (e.weight, e.relevance) for s, ts in g.out.items() for t, e in ts.items()}
    out |= {(n, STOP): (w, 0.0) for n, w in g.stop.items() if w}
    out |= {(n, ""): (b, 0.0) for n, b in g.baseline.items() if b}
    return out


def close(
    a: dict[tuple[str, str], tuple[float, float]], b: dict[tuple[str, str], tuple[float, float]]
) -> bool:
    keys = set(a) | set(b)
    zero = (0.0, 0.0)
    return all(
        abs(x - y) <= 1e-12
        for k in keys
        for x, y in zip(a.get(k, zero), b.get(k, zero), strict=True)
    )


def label_first_step(b: Brain, trace_id: str, score: float) -> int:
    st0 = b.trace(trace_id).steps[0]
    line = {"trace_id": trace_id, "node": st0.node, "hop": st0.hop}
    line["scores"] = {st0.candidates[0].target: score}  # type: ignore[assignment]
    return teach(b.store, [json.dumps(line)], apply=True, relevance=True).first_seq


# --------------------------------------------------------------------------- outcomes


def test_an_outcome_is_reversed_exactly_and_the_history_keeps_both(brain: Brain) -> None:
    before = values(brain.graph)
    brain.query(QUESTION, chat_id="c1")
    learned = brain.learn(1.0, chat_id="c1", rule="pg")
    report = brain.retract(chat_id="c1", reason="scored the wrong chat")
    assert report.recorded and report.kind == "outcome" and report.target_seq == learned.outcome_seq
    assert close(values(brain.graph), before)
    recs = list(brain.log.read(learned.outcome_seq))
    kinds = [type(r.event) for r in recs]
    assert kinds == [OutcomeRecorded, EdgesUpdated, Retracted, EdgesUpdated]
    update, head, reversal = recs[1].event, recs[2].event, recs[3].event
    assert isinstance(update, EdgesUpdated) and isinstance(reversal, EdgesUpdated)
    assert head == Retracted(target_seq=learned.outcome_seq, kind="outcome", reason=report.reason)
    assert reversal.rule == "retract" and reversal.cause_seq == recs[2].seq
    # nothing was clipped, so the reversal is exactly the opposite of each recorded delta
    assert [(d.source, d.target, -d.delta) for d in reversal.deltas] == [
        (d.source, d.target, d.delta) for d in update.deltas
    ]
    assert {b.node: b.value for b in reversal.baselines} == {b.node: 0.0 for b in update.baselines}
    with AnalyticsStore(brain.path / "a.duckdb") as store:
        store.catch_up(brain.log)
        rows = store.query("SELECT seq, target_seq, kind, reason FROM retractions").rows
        assert rows == [(recs[2].seq, learned.outcome_seq, "outcome", "scored the wrong chat")]
        d = update.deltas[0]
        changes = audit_edge(store, d.source, d.target).changes
        assert [c.rule for c in changes][-2:] == ["pg", "retract"]
        cause = changes[-1].cause
        assert (cause.kind, cause.target_seq, cause.target_kind) == (
            "retraction",
            recs[0].seq,
            "outcome",
        )
        assert cause.reward == 1.0 and cause.reason == "scored the wrong chat"


def test_later_changes_stay_when_an_older_outcome_is_retracted(brain: Brain) -> None:
    a = brain.query(QUESTION)
    w0 = values(brain.graph)
    first = brain.learn(1.0, trace_id=a.trace_id, rule="pg")
    w1 = values(brain.graph)
    clock = TickClock(start_ns=brain.log.last_ts + 20 * NS_PER_DAY)
    maintain(brain.store, ["decay"], clock=clock)  # a later change to the same weights
    w2 = values(brain.graph)
    brain.retract(seq=first.outcome_seq)
    now = values(brain.graph)
    zero = (0.0, 0.0)
    for d in first.deltas:
        key = (d.source, d.target)
        made = w1[key][0] - w0.get(key, zero)[0]
        assert now.get(key, zero)[0] == pytest.approx(w2[key][0] - made, abs=1e-12)
        if w0.get(key, zero)[0]:
            assert now[key][0] != pytest.approx(w0[key][0], abs=1e-6)  # decay stays


def test_a_teacher_label_is_reversed_with_its_relevance(brain: Brain) -> None:
    answer = brain.query(QUESTION)
    before = values(brain.graph)
    seq = label_first_step(brain, answer.trace_id, 0.8)
    assert values(brain.graph) != before
    report = brain.retract(seq=seq)
    assert report.kind == "label" and report.weights and report.relevance
    assert close(values(brain.graph), before)


rewards = st.sampled_from([-1.0, -0.5, 0.25, 1.0])
steps = st.lists(
    st.tuples(st.sampled_from(["learn", "label"]), rewards, st.sampled_from(["pg", "heuristic"])),
    min_size=1,
    max_size=5,
)


@pytest.fixture(scope="module")
def small_brain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("small")
    ws = root / "ws"
    ws.mkdir()
    for i, words in enumerate(["deploy rollback alert", "rollback database migration"]):
        body = "".join(
            f"## {w} {j}\n\n{words} {w} step {j}.\n\n" for j, w in enumerate(words.split())
        )
        (ws / f"note{i}.md").write_text(f"# Note {i}\n\n{body}")
    b, _ = Brain.init(root / "brain", ws, clock=TickClock())
    b.close()
    return root / "brain"


@contextmanager
def copy_of(path: Path) -> Iterator[Brain]:
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(path, Path(tmp) / "b")
        with Brain(Path(tmp) / "b", clock=TickClock(start_ns=10**18)) as b:
            yield b


@settings(max_examples=25)
@given(plan=steps)
def test_retracting_everything_newest_first_returns_every_value(
    small_brain: Path, plan: list[tuple[str, float, str]]
) -> None:
    with copy_of(small_brain) as b:
        answer = b.query("rollback deploy alert migration")
        start = values(b.graph)
        seqs = []
        for kind, reward, rule in plan:
            if kind == "learn":
                got = b.learn(reward, trace_id=answer.trace_id, rule=rule, again=True)
                seqs.append(got.outcome_seq)
            elif b.trace(answer.trace_id).steps:
                seqs.append(label_first_step(b, answer.trace_id, reward))
        for seq in reversed(seqs):
            b.retract(seq=seq)
            with pytest.raises(InputError, match="already retracted"):
                b.retract(seq=seq)
        assert close(values(b.graph), start)
        full = rebuild(b.log)
        for name in sorted(PROJECTIONS):  # replay --verify holds
            assert snapshot_bytes(name, full[name]) == snapshot_bytes(name, b.state(name))


# --------------------------------------------------------------------------- injections


def test_a_retracted_correction_lets_what_it_vetoed_fire_again(brain: Brain) -> None:
    assert WITHDRAWN in brain.query(HOTFIX, chat_id="c1").fired
    fix = brain.inject("CORRECTION", FIX, chat_id="c1")
    assert WITHDRAWN in fix.inhibits and WITHDRAWN not in brain.query(HOTFIX).fired
    edges = brain.graph.edge_count()
    report = brain.retract(node_id=fix.node_id)
    assert report.kind == "injection" and report.removed_node == fix.node_id
    assert fix.node_id not in brain.graph.nodes
    assert brain.graph.edge_count() == edges - len(report.removed)
    assert (fix.node_id, WITHDRAWN) in {(m.source, m.target) for m in report.removed}
    assert WITHDRAWN in brain.query(HOTFIX).fired
    again = brain.inject("CORRECTION", FIX, chat_id="c1")  # a new node, never the old id
    assert again.created and again.node_id == "correction::2"
    assert WITHDRAWN not in brain.query(HOTFIX).fired


# --------------------------------------------------------------------------- refusals


def test_bad_retractions_are_refused_and_record_nothing(brain: Brain) -> None:
    brain.query(QUESTION, chat_id="c1")
    learned = brain.learn(1.0, chat_id="c1")
    done = brain.retract(seq=learned.outcome_seq)
    cases: list[tuple[dict[str, object], str]] = [
        ({}, "exactly one of `seq`, `node_id`, `trace_id` or `chat_id`"),
        ({"seq": 1, "chat_id": "c1"}, "exactly one of"),
        ({"seq": 10**6}, "no record at seq 1000000"),
        ({"seq": 1}, r"at seq 1 \(workspace_attached\) cannot be retracted"),
        ({"seq": learned.outcome_seq}, f"already retracted at seq {done.seq}"),
        ({"seq": done.seq}, "is a retraction, which cannot be retracted"),
        ({"chat_id": "c1"}, "chat c1 has no outcome left to retract"),
        ({"chat_id": "nope"}, "unknown chat id"),
        ({"trace_id": "t1"}, "unknown trace id"),
        ({"node_id": "runbooks/ci.md::0"}, "is a chunk of runbooks/ci.md"),
        ({"node_id": "correction::9"}, "unknown injected node"),
        ({"seq": 1, "source": "human"}, "`source` picks among"),
    ]
    last = brain.log.last_seq
    for how, message in cases:
        with pytest.raises(InputError, match=message):
            brain.retract(**how)  # type: ignore[arg-type]
    assert brain.log.last_seq == last
    node = brain.inject("TEACHING", "Rollbacks are announced in #deploys").node_id
    dry = brain.retract(node_id=node, dry_run=True)
    assert not dry.recorded and dry.removed and brain.log.last_seq == last + 2
    with Brain(brain.path, writer=False, as_of=last) as past:
        with pytest.raises(InputError, match="opened as of seq"):
            past.retract(seq=learned.outcome_seq)


def test_a_retracted_outcome_no_longer_trains_the_route_model(brain: Brain) -> None:
    def examples() -> int:
        _, learn, _ = brain.store.settings()
        got = collect_examples(
            brain.log.read(), brain.graph, brain.store.search_index(), brain.store.embedder(), learn
        )
        return len(got.y)

    brain.learn(1.0, trace_id=brain.query(QUESTION).trace_id)
    assert examples() > 0
    brain.retract(seq=brain.log.last_seq - 1)
    assert examples() == 0
