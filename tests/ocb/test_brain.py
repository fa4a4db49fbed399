"""The brain end to end on the example workspace: query, learn, inject, sync."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocb.brain import Brain
from ocb.checks.brain import run_doctor
from ocb.engine.embed import HashEmbedder
from ocb_events.clock import TickClock
from ocb_events.errors import BrainExists, EmbedderMismatch, InputError, WorkspaceError
from ocb_events.schema import STOP, EdgesUpdated, OutcomeRecorded, QueryTraced
from replay import PROJECTIONS, rebuild
from replay.verify import FAIL
from tests.ocb.support import build_example

QUESTION = "how do I roll back a bad deploy"


def route(brain: Brain, trace_id: str) -> list[tuple[str, str]]:
    return [(st.node, st.chosen) for st in brain.trace(trace_id).steps if st.chosen != STOP]


def test_query_returns_sources_that_cite_the_file_lines(brain: Brain, workspace: Path) -> None:
    answer = brain.query(QUESTION, top=5)
    assert answer.trace_id.startswith("t") and len(answer.results) == 5
    top = answer.results[0]
    assert top.fired and top.source.startswith("runbooks/rollback.md#L")
    path, lines = top.source.split("#L")
    start, end = (int(x.lstrip("L")) for x in lines.split("-"))
    file_lines = (workspace / path).read_text().splitlines()
    assert top.text == "\n".join(file_lines[start - 1 : end])
    assert answer.context_chars == sum(len(brain.graph.nodes[n].text) for n in answer.fired)


def test_repeated_positive_outcomes_compile_a_reflex_route_and_shrink_the_context(
    brain: Brain,
) -> None:
    # a few seeds, so that what fires beyond them is the walk's to learn (every seed
    # fires whatever was learned)
    few = {"max_seeds": 4, "seed_ratio": 0.5}
    first = brain.query(QUESTION, **few)
    for _ in range(15):
        answer = brain.query(QUESTION, **few)
        brain.learn(1.0, trace_id=answer.trace_id, rule="pg")
    last = brain.query(QUESTION, **few)
    weights = [brain.graph.out[u][v].weight for u, v in route(brain, last.trace_id)]
    assert weights and all(w >= 0.6 for w in weights[:3])
    assert len(last.fired) < len(first.fired)
    assert last.context_chars < first.context_chars


def test_a_correction_with_all_vetoes_everything_that_fired_for_that_question(
    brain: Brain,
) -> None:
    before = brain.query(QUESTION, chat_id="c1")
    corrected = before.results[0].id
    report = brain.inject("CORRECTION", "Never skip CI for hotfixes", chat_id="c1", all_fired=True)
    assert report.created and report.selection == "all"
    assert report.inhibits == sorted(before.fired) and [c.id for c in report.vetoed] == before.fired
    after = brain.query(QUESTION)
    assert corrected not in after.fired
    assert corrected not in [h.id for h in after.results]
    assert report.node_id in after.fired
    again = brain.inject("CORRECTION", "Never skip CI for hotfixes", chat_id="c1")
    assert not again.created and again.node_id == report.node_id


def test_learning_records_the_outcome_then_its_deltas_with_the_cause(brain: Brain) -> None:
    answer = brain.query(QUESTION, chat_id="c9")
    report = brain.learn(-1.0, chat_id="c9", rule="heuristic", source="self")
    recs = list(brain.log.read(report.outcome_seq))
    assert isinstance(recs[0].event, OutcomeRecorded) and recs[0].event.trace_id == answer.trace_id
    assert isinstance(recs[1].event, EdgesUpdated) and recs[1].event.cause_seq == recs[0].seq
    assert recs[1].event.rule == "heuristic"
    assert all(d.delta < 0 for d in report.deltas)


def test_learning_from_an_explicit_node_path(brain: Brain) -> None:
    u = "runbooks/rollback.md::1"
    v = sorted(brain.graph.out[u])[0]
    w0 = brain.graph.out[u][v].weight
    report = brain.learn(1.0, fired_ids=[u, v])
    assert report.trace_id == "" and brain.graph.out[u][v].weight > w0
    with pytest.raises(InputError, match="unknown node"):
        brain.learn(1.0, fired_ids=[u, "runbooks/rollbak.md::1"])


@pytest.mark.parametrize("bad", [float("nan"), 1.5, -2.0, float("inf")])
def test_bad_outcomes_are_refused_and_nothing_is_recorded(brain: Brain, bad: float) -> None:
    answer = brain.query(QUESTION)
    seq = brain.log.last_seq
    with pytest.raises(InputError, match=r"\[-1, 1\]"):
        brain.learn(bad, trace_id=answer.trace_id)
    assert brain.log.last_seq == seq


def test_unknown_ids_and_empty_queries_are_user_errors(brain: Brain) -> None:
    brain.query(QUESTION, chat_id="chat-1")
    seq = brain.log.last_seq
    with pytest.raises(InputError, match="unknown trace id"):
        brain.learn(1.0, trace_id="t999999")
    with pytest.raises(InputError, match="unknown chat id 'chat-2'") as exc:
        brain.learn(1.0, chat_id="chat-2")
    assert exc.value.hint == "did you mean chat-1?"
    with pytest.raises(InputError, match="empty"):
        brain.query("   ")
    with pytest.raises(InputError, match="unknown node type"):
        brain.inject("RUMOUR", "x")
    assert brain.log.last_seq == seq


def test_a_query_without_recording_writes_nothing(brain: Brain) -> None:
    seq = brain.log.last_seq
    answer = brain.query(QUESTION, record=False)
    assert answer.trace_id == "" and answer.results and brain.log.last_seq == seq


def test_injected_nodes_and_learned_weights_survive_a_resync(
    brain: Brain, workspace: Path, built: Path
) -> None:
    node = brain.inject("TEACHING", "Rollbacks are announced in #deploys").node_id
    answer = brain.query(QUESTION)
    brain.learn(1.0, trace_id=answer.trace_id, rule="pg")
    u, v = route(brain, answer.trace_id)[0]
    learned = brain.graph.out[u][v].weight
    (workspace / "notes" / "new.md").write_text("# New note\n\nRoll back with helm.\n")
    (workspace / "notes" / "glossary.md").unlink()
    report = brain.sync(workspace)
    assert (report.files_indexed, report.files_removed) == (1, 1)
    assert node in brain.graph.nodes and brain.graph.out[u][v].weight == learned
    assert brain.sync(workspace).events == 0


def test_incremental_sync_equals_a_fresh_brain(
    brain: Brain, workspace: Path, tmp_path: Path
) -> None:
    rollback = workspace / "runbooks" / "rollback.md"
    rollback.write_text(
        "# Preface\n\nRead me first.\n\n" + rollback.read_text().replace("helm", "Helm")
    )
    (workspace / "memory" / "2026-11-21.md").write_text("# 2026-11-21\n\nQuiet day.\n")
    brain.sync(workspace)
    with Brain.create(tmp_path / "fresh", clock=TickClock()) as fresh:
        fresh.sync(workspace)
        view = sorted(
            (n.path, n.start_line, n.end_line, n.text) for n in fresh.graph.nodes.values()
        )
    assert (
        sorted((n.path, n.start_line, n.end_line, n.text) for n in brain.graph.nodes.values())
        == view
    )


def test_reopened_brain_equals_a_full_rebuild(built: Path) -> None:
    with Brain(built, clock=TickClock(), snapshot_every=3) as b:
        for q in (QUESTION, "who is on call", "postgres pool size"):
            b.learn(0.5, trace_id=b.query(q).trace_id)
    with Brain(built, writer=False) as b:
        full = rebuild(b.log)
        for name in PROJECTIONS:
            assert PROJECTIONS[name].snapshot(b.state(name)) == PROJECTIONS[name].snapshot(
                full[name]
            )
    assert all(c.status != FAIL for c in run_doctor(built))


def test_the_brain_refuses_another_workspace_or_embedder(brain: Brain, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.md").write_text("# A\n\nalpha\n")
    with pytest.raises(BrainExists):
        brain.sync(other)
    with Brain(brain.path.parent / "x", create=True, embedder=HashEmbedder(dim=64)) as b2:
        b2.sync(other)
    with Brain(brain.path.parent / "x", writer=False, embedder=HashEmbedder(dim=32)) as b3:
        with pytest.raises(EmbedderMismatch):
            b3.query("alpha")


def test_an_empty_workspace_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "image.png").write_bytes(b"\x89PNG")
    with Brain.create(tmp_path / "b") as b:
        with pytest.raises(WorkspaceError, match="no Markdown"):
            b.sync(empty)
        assert b.log.last_seq == 0


def test_every_trace_records_seeds_steps_and_parameters(brain: Brain) -> None:
    answer = brain.query(QUESTION, mode="edge+sim", chat_id="c3")
    rec = next(r for r in brain.log.read(brain.log.last_seq))
    assert isinstance(rec.event, QueryTraced)
    ev = rec.event
    assert ev.trace_id == answer.trace_id and ev.chat_id == "c3" and ev.params.mode == "edge+sim"
    assert ev.seeds and ev.steps and list(ev.fired) == answer.fired
    assert all(c.tier in ("reflex", "habitual") for st in ev.steps for c in st.candidates)


def test_the_example_brain_of_a_test_is_byte_for_byte_the_one_it_would_build(
    built: Path, workspace: Path, tmp_path: Path
) -> None:
    """``built`` is copied from a brain built once per session, from a workspace at the
    same path as this test's: it holds exactly the bytes of a build in the test."""
    fresh = build_example(tmp_path / "fresh", workspace)

    def files(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    assert files(built) == files(fresh)
