"""No answer exceeds its budget: whatever the files (long lines, huge one-line files),
the chunk sizes and the budget, a query's context and its results stay within
``traversal.max_context_chars``, and every result cites lines inside its file."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from hypothesis import given, settings, strategies as st

from ocb.brain import Brain
from ocb_events.clock import TickClock
from workspace_sync import split_lines

WORDS = ["deploy", "rollback", "canary", "database", "incident", "pager", "alpha", "beta"]
words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
line = st.one_of(
    st.just(""),
    st.just("# Runbook"),
    st.just("## Rollback steps"),
    st.just("- check the canary"),
    words,
    st.lists(st.sampled_from(WORDS), min_size=100, max_size=600).map(" ".join),  # long
    st.text(alphabet="xyz", min_size=300, max_size=2500),  # one long word
)
huge = st.integers(1, 4).map(lambda k: " ".join(["deploy the canary then rollback"] * 150 * k))
files = st.dictionaries(
    st.sampled_from(["a.md", "b.md", "notes/c.md", "d.txt"]),
    st.one_of(st.lists(line, min_size=1, max_size=10).map("\n".join), huge),
    min_size=1,
    max_size=3,
)
# chunk caps from tiny to far beyond any budget (as in a brain chunked before the cap)
chunking = st.tuples(st.integers(50, 800), st.one_of(st.integers(50, 3000), st.just(200_000)))
budgets = st.lists(st.integers(1, 9000), min_size=1, max_size=4)
SOURCE = re.compile(r"^(?P<path>.+)#L(?P<start>\d+)-L(?P<end>\d+)$")


@settings(max_examples=15)
@given(files, chunking, budgets, st.sampled_from(["rollback the canary", "deploy xyz", "pager"]))
def test_every_answer_stays_within_its_budget_and_cites_lines_of_its_file(
    ws_files: dict[str, str], chunk: tuple[int, int], limits: list[int], question: str
) -> None:
    if all(not t.strip() for t in ws_files.values()):
        ws_files = {**ws_files, "e.md": "deploy"}
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        for rel, text in ws_files.items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(text, encoding="utf-8")
        with Brain.create(Path(tmp) / "brain", clock=TickClock(), durability="none") as b:
            b.set_config("indexing.chunk_chars", chunk[0])
            b.set_config("indexing.max_chunk_chars", chunk[1])
            b.sync(ws)
            for budget in limits:
                a = b.query(question, top=5, max_context_chars=budget)
                assert len(a.context) <= budget
                assert a.context_chars <= budget
                assert sum(len(r.text) for r in a.results) <= budget
                for r in a.results:
                    m = SOURCE.match(r.source)
                    assert m is not None, r.source
                    lines = split_lines(ws_files[m["path"]])
                    start, end = int(m["start"]), int(m["end"])
                    assert 1 <= start <= end <= len(lines)
                    assert r.text in "\n".join(lines[start - 1 : end])


def test_a_query_on_a_huge_one_line_file_returns_at_most_its_budget(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.md").write_text(" ".join(["deploy the canary then rollback"] * 8000))  # 256 KB
    b, report = Brain.init(tmp_path / "brain", ws, clock=TickClock(), durability="none")
    with b:
        assert report.chunks_added > 400
        assert max(len(n.text) for n in b.graph.nodes.values()) <= 2000
        a = b.query("rollback the canary")
        assert 0 < len(a.context) <= 6000 and a.results
        assert {r.source for r in a.results} == {"big.md#L1-L1"}
