"""What an answer cited: citations as answers write them map to the chunks the trace
fired, are credited as ``used``, and a good answer that cited nothing the brain gave
it credits nothing (its outcome is recorded as 0)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, strategies as st

from ocb.brain import Brain
from ocb.engine.citations import Citation, match_citations, parse_citation
from ocb_events.errors import InputError
from ocb_events.schema import OutcomeRecorded
from projections.graph import Node
from tests.ocb.daemon.support import DEADLINE, ROOT, env

QUESTION = "how do I roll back a bad deploy"


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("runbooks/rollback.md#L12-L20", Citation("runbooks/rollback.md", 12, 20)),
        ("runbooks/rollback.md#L12", Citation("runbooks/rollback.md", 12, 12)),
        ("runbooks/rollback.md", Citation("runbooks/rollback.md")),
        ("[./runbooks/rollback.md#L3-L5]", Citation("runbooks/rollback.md", 3, 5)),
        ("`notes/a.md#L9-L2`", Citation("notes/a.md", 2, 9)),
        ("inject:correction::1", Citation("inject:correction::1")),
        ("  ", None),
    ],
)
def test_a_citation_is_read_as_answers_write_it(text: str, want: Citation | None) -> None:
    assert parse_citation(text) == want


def _graph(nodes: list[Node]) -> Any:
    return SimpleNamespace(nodes={n.id: n for n in nodes})


@given(
    spans=st.lists(st.tuples(st.integers(1, 50), st.integers(0, 20)), min_size=1, max_size=6),
    pick=st.data(),
)
def test_a_citation_names_exactly_the_fired_chunks_whose_lines_it_overlaps(
    spans: list[tuple[int, int]], pick: st.DataObject
) -> None:
    nodes = [
        Node(id=f"a.md::{i}", kind="chunk", text="x", path="a.md", start_line=s, end_line=s + n)
        for i, (s, n) in enumerate(spans)
    ]
    fired = [n.id for n in nodes]
    lo = pick.draw(st.integers(1, 80))
    hi = pick.draw(st.integers(lo, 90))
    ids, hits, missed = match_citations(_graph(nodes), fired, [f"a.md#L{lo}-L{hi}"])
    want = sorted(n.id for n in nodes if n.start_line <= hi and lo <= n.end_line)
    assert ids == want
    assert (missed == []) == bool(want) and len(hits) == (1 if want else 0)
    whole, _, _ = match_citations(_graph(nodes), fired[:1], ["a.md", "b.md#L1"])
    assert whole == fired[:1], "a file alone names its fired chunks, another file none"


def test_citations_credit_the_fired_chunks_they_name(brain: Brain) -> None:
    answer = brain.query(QUESTION, top=5)
    first, second = answer.results[0], answer.results[1]
    assert first.fired and second.fired
    got = brain.learn(
        1.0, trace_id=answer.trace_id, cited=[first.source, "notes/none.md#L3"], source="self"
    )
    assert got.used == [first.id] and got.unmatched == ["notes/none.md#L3"]
    assert got.reward == 1.0 and set(got.credits) >= {first.id}
    assert all(d < 0 for n, d in got.credits.items() if n != first.id), "the rest dropped"
    out = list(brain.events(types=["outcome_recorded"]))[-1].event
    assert isinstance(out, OutcomeRecorded)
    assert out.cited == (first.source, "notes/none.md#L3") and out.used == (first.id,)


def test_a_good_answer_that_cited_nothing_fired_credits_nothing(brain: Brain) -> None:
    answer = brain.query(QUESTION, top=5)
    routes = brain.state("routes").routes.copy()
    got = brain.learn(1.0, trace_id=answer.trace_id, cited=["notes/elsewhere.md#L1-L4"])
    assert (got.reward, got.used, got.unmatched) == (0.0, [], ["notes/elsewhere.md#L1-L4"])
    assert got.credits == {} and brain.state("routes").routes == routes
    out = list(brain.events(types=["outcome_recorded"]))[-1].event
    assert isinstance(out, OutcomeRecorded) and out.reward == 0.0
    with pytest.raises(InputError, match="already scored by human"):
        brain.learn(1.0, trace_id=answer.trace_id)  # the trace was scored: no blind retry


def test_citations_go_with_a_good_outcome_of_a_trace(brain: Brain) -> None:
    answer = brain.query(QUESTION, top=5)
    before = brain.log.last_seq
    with pytest.raises(InputError, match="the outcome is not positive"):
        brain.learn(-1.0, trace_id=answer.trace_id, cited=[answer.results[0].source])
    with pytest.raises(InputError, match="`cited` goes with a trace"):
        brain.learn(1.0, fired_ids=answer.fired[:2], cited=[answer.results[0].source])
    assert brain.log.last_seq == before


def test_ocb_learn_takes_cited_on_the_command_line(built: Path) -> None:
    with Brain(built) as b:
        answer = b.query(QUESTION, top=5)
    cite = answer.results[0].source
    argv = [sys.executable, "-m", "ocb.entry", "learn", "--brain", str(built), "--trace",
            answer.trace_id, "--outcome", "1", "--cited", cite, "--cited", "x.md",
            "--json"]  # fmt: skip
    proc = subprocess.run(
        argv, env=env(), capture_output=True, text=True, timeout=DEADLINE, cwd=str(ROOT)
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["used"] == [answer.results[0].id] and got["unmatched"] == ["x.md"]
