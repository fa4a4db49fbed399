"""What-if replay and diffs between points: exact reproduction with the recorded
settings, the real brain left untouched, settings moving weights the expected way."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, strategies as st

from ocb.brain import Brain
from ocb.upkeep.maintain import maintain
from ocb.upkeep.weights import NS_PER_DAY
from ocb.whatif import diff, scratch_replay, what_if
from ocb_events.clock import TickClock
from ocb_events.errors import InputError
from ocb_events.schema import (
    STOP,
    EdgesRemoved,
    EdgesUpdated,
    MaintenanceRan,
    OutcomeRecorded,
    QueryTraced,
)
from projections import graph
from replay import PROJECTIONS, iso, snapshot_bytes
from tests.ocb.support import (
    QUESTIONS,
    ask_and_learn,
    label,
    ops,
    run_op,
    tree_bytes,
    workspaces,
    write_workspace,
)


def weights(g: graph.State) -> dict[tuple[str, str], float]:
    out = {(s, t): e.weight for s, ts in g.out.items() for t, e in ts.items()}
    out |= {(n, STOP): w for n, w in g.stop.items() if w}
    return out


def later(brain: Brain, days: float) -> TickClock:
    """A clock ``days`` after the brain's last record (for maintenance decisions)."""
    return TickClock(start_ns=brain.log.last_ts + int(days * NS_PER_DAY))


# --------------------------------------------------------------------------- exactness


@given(workspaces, st.lists(ops, min_size=2, max_size=20), st.data())
def test_what_if_with_the_recorded_settings_reproduces_the_brain_exactly(
    files: list[list[tuple[str, str]]], workload: list[tuple[Any, ...]], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        write_workspace(Path(tmp) / "ws", files)
        clock = TickClock()
        b, _ = Brain.init(Path(tmp) / "brain", Path(tmp) / "ws", clock=clock)
        with b:
            last: dict[str, Any] = {}
            for op in workload:
                run_op(b, op, clock, last)
        with Brain(Path(tmp) / "brain", writer=False) as real:
            end = real.log.last_seq
            for start in (0, data.draw(st.integers(0, end), label="from")):
                with scratch_replay(real.store, start) as r:
                    assert list(r.brain.log.read()) == list(real.log.read())
                    for name in sorted(PROJECTIONS):
                        assert snapshot_bytes(name, r.brain.state(name)) == snapshot_bytes(
                            name, real.state(name)
                        )
                    s = r.stats
                    event(f"re-decided: {min(s.outcomes, 3)}; upkeep: {min(s.maintenance, 1)}")
                    event(f"retractions re-decided: {min(s.retractions, 2)}")
                    done = s.copied + s.outcomes + s.maintenance + s.replaced + s.retractions
                    assert done == end


def test_replay_copies_before_the_point_and_re_decides_after_it(brain: Brain) -> None:
    answer = brain.query(QUESTIONS[0])
    brain.learn(1.0, trace_id=answer.trace_id)
    mid = brain.log.last_seq
    answer = brain.query(QUESTIONS[1], chat_id="c1")
    brain.learn(-1.0, chat_id="c1", rule="heuristic", source="self")
    brain.learn(0.5, fired_ids=answer.fired[:3], source="harvester")
    with scratch_replay(brain.store, mid) as r:
        assert (r.stats.outcomes, r.stats.replaced, r.stats.maintenance) == (2, 2, 0)
        assert r.stats.copied == brain.log.last_seq - 4 and r.queries == [QUESTIONS[1]]
        assert snapshot_bytes("graph", r.brain.graph) == snapshot_bytes("graph", brain.graph)
    with scratch_replay(brain.store, 0) as r:
        assert r.stats.outcomes == 3 and r.queries == QUESTIONS[:2]


# --------------------------------------------------------------------------- the real brain


def test_what_if_and_diff_never_change_the_real_brain(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Brain(built, clock=TickClock(start_ns=1_800_000_000_000_000_000)) as b:
        for q in QUESTIONS:
            b.learn(1.0, trace_id=b.query(q).trace_id)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    before = tree_bytes(built)
    with Brain(built, writer=False) as real:
        report = what_if(real.store, 0, rule="heuristic", eta=0.3)
        diff(real.store, 1, real.log.last_seq)
    assert report.weights.edges_changed > 0
    assert tree_bytes(built) == before
    assert list(scratch.iterdir()) == []  # the scratch brain is gone


def test_bad_input_is_refused_before_anything_happens(brain: Brain) -> None:
    before = tree_bytes(brain.path)
    end = brain.log.last_seq
    cases: list[tuple[dict[str, Any], str]] = [
        ({"start": end + 1}, rf"`start` {end + 1} is outside the history"),
        ({"start": "yesterday"}, r"neither a seq nor an ISO time"),
        ({"rule": "magic"}, r"unknown learning rule 'magic'"),
        ({"eta": -0.1}, r"learning.eta must be at least 0, got -0.1"),
        ({"gamma": 2}, r"learning.gamma must be at least 0 and at most 1, got 2"),
        ({"threshold": -1.0}, r"`threshold` must be at least 0"),
        ({"top": 0}, r"`top` must be at least 1"),
        ({"queries": -1}, r"`queries` must be at least 0"),
        ({"tau": 2}, r"unknown setting 'learning.tau'"),
    ]
    for kwargs, pattern in cases:
        with pytest.raises(InputError, match=pattern) as err:
            what_if(brain.store, **kwargs)
        assert err.value.hint
    with pytest.raises(InputError, match=r"`start` 3 is after `end` 2") as err:
        diff(brain.store, 3, 2)
    assert "valid: seq 1 to" in _hint(lambda: diff(brain.store, 1, end + 5))
    assert tree_bytes(brain.path) == before and brain.log.last_seq == end


def _hint(call: Any) -> str:
    with pytest.raises(InputError) as err:
        call()
    return str(err.value.hint)


# --------------------------------------------------------------------------- other settings


def test_eta_zero_means_no_learning_even_over_recorded_config(brain: Brain) -> None:
    start = brain.log.last_seq
    at_start = weights(brain.graph)
    brain.set_config("learning.eta", 0.3)  # an override beats recorded config
    ask_and_learn(brain, 6)
    with scratch_replay(brain.store, start, {"eta": 0.0}) as r:
        assert weights(r.brain.graph) == at_start
        assert r.brain.graph.baseline  # the baselines still follow the rewards
    report = what_if(brain.store, start, eta=0.0)
    assert report.overrides == {"eta": 0.0}
    assert report.weights.edges_changed + report.weights.stops_changed == len(
        set(weights(brain.graph).items()) - set(at_start.items())
    )


def test_a_larger_rate_moves_every_rewarded_edge_further(brain: Brain) -> None:
    brain.set_config("learning.rule", "heuristic")
    start = brain.log.last_seq
    ask_and_learn(brain, 6, rule="heuristic")
    real = weights(brain.graph)
    with scratch_replay(brain.store, start, {"eta": 0.2}) as hi:
        high = weights(hi.brain.graph)
    with scratch_replay(brain.store, start, {"eta": 0.05}) as lo:
        low = weights(lo.brain.graph)
    assert real.keys() == high.keys() == low.keys()
    assert all(low[k] <= real[k] <= high[k] for k in real)
    assert sum(high[k] > real[k] > low[k] for k in real) > 5


def test_negative_outcomes_with_a_larger_rate_weaken_further(brain: Brain) -> None:
    start = brain.log.last_seq
    ask_and_learn(brain, 4, reward=-1.0)
    with scratch_replay(brain.store, start, {"eta": 0.3, "rule": "heuristic"}) as r:
        alt = weights(r.brain.graph)
    base = weights(brain.graph)
    chosen = {
        (st_.node, st_.chosen)
        for rec in brain.log.read(start + 1)
        if isinstance(rec.event, QueryTraced)
        for st_ in rec.event.steps
        if st_.chosen != STOP
    }
    assert chosen and all(alt[k] < base[k] for k in chosen)


def test_decay_is_re_decided_on_the_what_if_weights(brain: Brain) -> None:
    maintain(brain.store, "decay", clock=later(brain, 1))  # decay measures from here on
    start = brain.log.last_seq
    at_start = weights(brain.graph)
    ask_and_learn(brain, 4)
    maintain(brain.store, "decay", clock=later(brain, 30), half_life_days=30)
    run = next(r for r in brain.log.read(start) if isinstance(r.event, MaintenanceRan))
    factor = dict((s.key, s.value) for s in run.event.params)["factor"]  # type: ignore[union-attr]
    assert factor == pytest.approx(0.5, abs=1e-3)
    with scratch_replay(brain.store, start, {"eta": 0.0}) as r:
        got = weights(r.brain.graph)
        assert r.stats.maintenance == 1
    assert got.keys() == at_start.keys()
    assert all(got[k] == pytest.approx(w * factor, abs=1e-12) for k, w in at_start.items())
    with scratch_replay(brain.store, start) as r:  # and with the recorded settings, exactly
        assert snapshot_bytes("graph", r.brain.graph) == snapshot_bytes("graph", brain.graph)


def test_a_decay_too_small_for_todays_rule_carries_its_time_over_in_a_what_if(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A brain recorded a decay that today's rule finds too small to record (it took
    off less than ``MIN_DECAY``): the what-if records nothing for it, as ``ocb
    maintain`` would now, and the next decay covers its time."""
    clock = brain.clock  # one clock for the decisions and the records
    assert isinstance(clock, TickClock)

    def decay_after(days: float) -> None:
        clock.now_ns += int(days * NS_PER_DAY)
        maintain(brain.store, "decay", clock=clock)

    decay_after(1)
    start = brain.log.last_seq
    with monkeypatch.context() as m:
        m.setattr("ocb.upkeep.weights.MIN_DECAY", 1e-6)  # the rule an older brain was recorded with
        decay_after(0.01)
    decay_after(30)

    def decays(b: Brain) -> list[float]:
        return [
            float(dict((p.key, p.value) for p in r.event.params)["factor"])
            for r in b.log.read(start + 1)
            if isinstance(r.event, MaintenanceRan) and r.event.op == "decay"
        ]

    real = decays(brain)
    assert len(real) == 2 and 1 - real[0] < 1e-3
    with scratch_replay(brain.store, start) as r:
        assert len(decays(r.brain)) == 1, "the small decay is not recorded"
        alt = weights(r.brain.graph)
    # one decay over both spans takes off what the two recorded ones took together
    got = weights(brain.graph)
    assert alt.keys() == got.keys()
    assert all(alt[k] == pytest.approx(w, rel=1e-9, abs=1e-12) for k, w in got.items())


def test_a_retracted_outcome_or_label_leaves_no_trace_in_any_what_if(brain: Brain) -> None:
    answer = brain.query(QUESTIONS[0])
    taken = [brain.learn(1.0, trace_id=answer.trace_id, rule="pg").outcome_seq]
    taken.append(label(brain, answer.trace_id, 0.8))
    for seq in taken:
        brain.retract(seq=seq)
    kept = brain.learn(-1.0, trace_id=brain.query(QUESTIONS[1]).trace_id, rule="pg").outcome_seq

    def touched(seq: int) -> set[tuple[str, str]]:
        update = next(iter(brain.log.read(seq + 1, seq + 1))).event
        assert isinstance(update, EdgesUpdated) and update.cause_seq == seq
        return {(d.source, d.target) for d in update.deltas}

    only_taken = (touched(taken[0]) | touched(taken[1])) - touched(kept)
    assert only_taken
    for overrides in ({"eta": 0.5}, {"rule": "heuristic", "eta": 0.3}):
        with scratch_replay(brain.store, 0, overrides) as r:
            assert (r.stats.retractions, r.stats.outcomes) == (2, 2)
            real, alt = weights(brain.graph), weights(r.brain.graph)
            assert all(alt.get(p, 0.0) == pytest.approx(real.get(p, 0.0)) for p in only_taken)
            assert real != alt  # the outcome that stays moved with the settings


def test_an_update_the_record_lacks_shifts_later_seqs_and_their_causes_follow(
    brain: Brain,
) -> None:
    brain.set_config("learning.rule", "pg")
    brain.set_config("learning.eta", 0.0)
    brain.set_config("learning.baseline_rate", 0.0)
    start = brain.log.last_seq
    brain.learn(1.0, trace_id=brain.query(QUESTIONS[0]).trace_id)  # records no update
    maintain(brain.store, "decay,prune", clock=later(brain, 60), prune_below=0.2)
    recorded = [r.event for r in brain.log.read(start + 1)]
    assert not any(isinstance(e, EdgesUpdated) and e.rule == "pg" for e in recorded)
    with scratch_replay(brain.store, start, {"eta": 0.5}) as r:
        recs = {rec.seq: rec.event for rec in r.brain.log.read()}
        assert r.brain.log.last_seq == brain.log.last_seq + 1
        causes = {
            type(ev).__name__: type(recs[ev.cause_seq]).__name__
            for ev in recs.values()
            if isinstance(ev, EdgesUpdated | EdgesRemoved) and ev.cause_seq > start
        }
        assert causes == {"EdgesUpdated": "MaintenanceRan", "EdgesRemoved": "MaintenanceRan"}
        pg = [ev for ev in recs.values() if isinstance(ev, EdgesUpdated) and ev.rule == "pg"]
        assert len(pg) == 1 and isinstance(recs[pg[0].cause_seq], OutcomeRecorded)
        assert pg[0].params is not None and pg[0].params.eta == 0.5


# --------------------------------------------------------------------------- the report


def test_the_report_compares_tiers_and_re_runs_the_recorded_queries(brain: Brain) -> None:
    start = brain.log.last_seq
    ask_and_learn(brain, 6)
    same = what_if(brain.store, start)
    assert same.replay.records == brain.log.last_seq and same.to_seq == brain.log.last_seq
    w = same.weights
    assert (w.edges_changed, w.stops_changed, w.edges_within, w.edges, w.transitions) == (
        0,
        0,
        0,
        [],
        {},
    )
    assert w.tiers_before == w.tiers_after and sum(w.tiers_before.values()) == (
        brain.graph.edge_count()
    )
    q = same.queries
    assert q.count == 3 and q.changed == 0 and q.top == []
    assert (q.real_mean_fired, q.real_mean_context_chars) == (
        q.what_if_mean_fired,
        q.what_if_mean_context_chars,
    )
    fired = [len(brain.query(t, record=False).fired) for t in QUESTIONS]
    assert q.real_mean_fired == round(sum(fired) / 3, 3)
    other = what_if(brain.store, start, rule="heuristic", eta=0.5, queries=1, top=3)
    assert other.queries.count == 1 and len(other.weights.edges) == 3
    assert other.weights.tiers_after != other.weights.tiers_before
    assert other.replay.outcomes == same.replay.outcomes


# --------------------------------------------------------------------------- diff


def test_a_diff_lists_exactly_the_edges_the_records_in_between_changed(brain: Brain) -> None:
    a = brain.log.last_seq
    ask_and_learn(brain, 4)
    b = brain.log.last_seq
    ask_and_learn(brain, 2, reward=-1.0)
    named = {
        (d.source, d.target)
        for rec in brain.log.read(a + 1, b)
        if isinstance(rec.event, EdgesUpdated)
        for d in rec.event.deltas
    }
    report = diff(brain.store, a, b, top=10_000)
    g = report.graph
    assert {(c.source, c.target) for c in g.edges} == named
    assert g.edges_changed == sum(t != STOP for _, t in named)
    assert g.stops_changed == sum(t == STOP for _, t in named)
    assert (g.nodes_added, g.nodes_removed, g.nodes_changed, g.edges_added) == (0, 0, 0, 0)
    assert (report.from_seq, report.to_seq, report.records) == (a, b, b - a)
    assert report.from_time == iso(brain.log.ts_of(a))
    assert diff(brain.store, a, b, threshold=0.05, top=5).graph.edges == g.edges[:5]
    assert diff(brain.store, b).to_seq == brain.log.last_seq


def test_a_diff_names_removed_edges_and_counts_from_the_empty_brain(brain: Brain) -> None:
    ask_and_learn(brain, 2)
    a = brain.log.last_seq
    maintain(brain.store, "prune", clock=later(brain, 1), prune_below=0.31)
    removed = [
        (e.source, e.target)
        for rec in brain.log.read(a + 1)
        if isinstance(rec.event, EdgesRemoved)
        for e in rec.event.edges
    ]
    report = diff(brain.store, a, top=len(removed) + 5)
    assert removed and report.graph.edges_removed == len(removed)
    assert {(c.source, c.target) for c in report.graph.edges if c.change == "removed"} == set(
        removed
    )
    whole = diff(brain.store, 0).graph
    assert whole.nodes_added == len(brain.graph.nodes) and whole.edges_added == (
        brain.graph.edge_count()
    )
    assert diff(brain.store, 0).from_time == ""
