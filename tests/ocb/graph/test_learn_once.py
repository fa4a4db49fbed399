"""An outcome counts once: a retry with the same request id records nothing new, a
trace is scored once per source unless asked again, and temp files a failed write
left behind are swept by the next writer."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocb.brain import Brain
from ocb_events.errors import InputError

QUESTION = "how do I roll back a bad deploy"


def test_a_retry_with_the_same_request_id_is_recorded_once(brain: Brain) -> None:
    answer = brain.query(QUESTION, chat_id="c1")
    first = brain.learn(1.0, trace_id=answer.trace_id, request_id="run-7")
    seq = brain.log.last_seq
    again = brain.learn(-1.0, chat_id="c1", request_id="run-7", source="self")
    assert brain.log.last_seq == seq, "nothing new recorded"
    assert (again.recorded, first.recorded) == (False, True)
    assert (again.outcome_seq, again.reward, again.source) == (first.outcome_seq, 1.0, "human")
    assert again.deltas == first.deltas and again.rule == first.rule


def test_a_trace_is_scored_once_per_source_unless_asked_again(brain: Brain) -> None:
    answer = brain.query(QUESTION, chat_id="c1")
    brain.learn(1.0, trace_id=answer.trace_id)
    seq = brain.log.last_seq
    with pytest.raises(InputError) as info:
        brain.learn(1.0, chat_id="c1")
    assert "already scored by human" in info.value.message
    assert "`again`" in info.value.hint and "`request_id`" in info.value.hint
    assert brain.log.last_seq == seq
    brain.learn(0.5, trace_id=answer.trace_id, source="self")  # another source
    brain.learn(1.0, trace_id=answer.trace_id, again=True)
    assert brain.state("traces").outcomes[answer.trace_id] == 3


def test_a_retracted_outcome_does_not_count(brain: Brain) -> None:
    answer = brain.query(QUESTION)
    report = brain.learn(1.0, trace_id=answer.trace_id)
    brain.retract(seq=report.outcome_seq)
    assert brain.learn(-1.0, trace_id=answer.trace_id).recorded


def test_temp_files_left_by_a_killed_write_are_swept_by_the_next_writer(built: Path) -> None:
    strays = [
        built / "snapshots" / "graph-00000000000000000042.tmp",
        built / "blobs" / "ab" / ("ab" + "0" * 62 + ".tmp"),
        built / "cache" / "search-1-x.idx.tmp",
    ]
    for p in strays:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"half")
    with Brain(built, writer=False):
        pass
    assert all(p.exists() for p in strays), "a reader changes nothing"
    with Brain(built):
        pass
    assert not any(p.exists() for p in strays)
