"""A store over any event log: a brain backed by the in-memory log syncs, answers and
learns exactly as one backed by the segment log on disk."""

from __future__ import annotations

from pathlib import Path

from ocb.brain import Brain
from ocb.graph.query import query
from ocb.store import Store
from ocb_events.clock import TickClock
from ocb_events.memory import MemoryLog

QUESTION = "how do I roll back a bad deploy"


def test_a_brain_over_a_memory_log_queries_and_learns(tmp_path: Path, workspace: Path) -> None:
    log = MemoryLog(clock=TickClock())
    with Brain(tmp_path / "mem", clock=TickClock(), log=log) as mem:
        mem.sync(workspace)
        answer = mem.query(QUESTION, chat_id="c1")
        report = mem.learn(1.0, trace_id=answer.trace_id, rule="pg")
        assert answer.fired and report.deltas
        assert mem.state("traces").outcomes[answer.trace_id] == 1
    assert not (tmp_path / "mem" / "log").exists(), "the records live in the given log"
    with Brain.create(tmp_path / "disk", clock=TickClock()) as disk:
        disk.sync(workspace)
        same = disk.query(QUESTION, chat_id="c1")
        assert disk.learn(1.0, trace_id=same.trace_id, rule="pg") == report
        assert (same.fired, same.context) == (answer.fired, answer.context)
        assert list(disk.log.read()) == list(log.read())


def test_a_store_over_a_memory_log_answers_without_the_facade(
    tmp_path: Path, workspace: Path
) -> None:
    with Brain.init(tmp_path / "b", workspace, clock=TickClock(), log=MemoryLog())[0] as brain:
        log = brain.log
    store = Store(tmp_path / "b", clock=TickClock(), log=log)
    answer = query(store, QUESTION, record=False)
    assert answer.results and not answer.trace_id
