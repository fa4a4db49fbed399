"""Chunk identity through syncs: an edited chunk keeps its id, edges and weights with its
new text and vector; a renamed file keeps every id, edge, weight and fact; and the brain
then holds what a fresh brain of the same workspace holds."""

from __future__ import annotations

import re
from pathlib import Path

from ocb.brain import Brain
from ocb.cli.render.graph import sync_text
from ocb.engine.routes import live_credits
from ocb_events.clock import TickClock
from ocb_events.schema import STOP, FileChanged, FileMoved, NodesEmbedded
from projections import graph

QUESTION = "how do I roll back a bad deploy"


def file_view(g: graph.State) -> dict[str, list[tuple[str, int, int, int, str]]]:
    """Each file's chunks in file order: text, lines, column, heading."""
    return {
        p: [
            (n.text, n.start_line, n.end_line, n.start_col, n.heading)
            for n in (g.nodes[i] for i in e.chunks)
        ]
        for p, e in sorted(g.files.items())
    }


def weights(g: graph.State) -> dict[tuple[str, str], float]:
    out = {(s, t): e.weight for s, ts in g.out.items() for t, e in ts.items()}
    return out | {(n, STOP): w for n, w in g.stop.items() if w}


def typo(text: str) -> str:
    """``text`` with two letters of its first long word (not on a heading line) swapped."""
    for line in text.splitlines():
        m = None if line.lstrip().startswith("#") else re.search(r"\b[a-z]{5,}\b", line)
        if m:
            w = m.group()
            return text.replace(w, w[0] + w[2] + w[1] + w[3:], 1)
    raise AssertionError(f"no word to misspell in {text!r}")


def learned_chunk(brain: Brain) -> str:
    """A chunk whose outgoing edges a policy-gradient outcome changed."""
    answer = brain.query(QUESTION)
    brain.learn(1.0, trace_id=answer.trace_id, rule="pg")
    steps = [s for s in brain.trace(answer.trace_id).steps if s.chosen != STOP]
    return steps[0].node


def test_an_edited_chunk_and_a_renamed_file_keep_ids_edges_and_weights(
    brain: Brain, workspace: Path, tmp_path: Path
) -> None:
    u = learned_chunk(brain)
    g = brain.graph
    node = g.nodes[u]
    learned, vector = weights(g), brain.state("vectors").rows[u]
    path = workspace / node.path
    fixed = typo(node.text)
    path.write_text(path.read_text().replace(node.text, fixed, 1))
    seq = brain.log.last_seq
    report = brain.sync(workspace)
    assert (report.files_changed, report.chunks_revised, report.chunks_added) == (1, 1, 0)
    assert report.chunks_removed == 0 and "1 revised" in sync_text(report)
    g = brain.graph
    assert g.nodes[u].text == fixed and g.nodes[u].text != node.text
    assert (g.nodes[u].start_line, g.nodes[u].end_line) == (node.start_line, node.end_line)
    assert weights(g) == learned
    records = [r.event for r in brain.log.read(seq + 1)]
    (changed,) = [e for e in records if isinstance(e, FileChanged)]
    assert [c.id for c in changed.revised] == [u]
    assert any(isinstance(e, NodesEmbedded) and u in e.node_ids for e in records)
    assert brain.state("vectors").rows[u] != vector  # the new text's vector

    ids = g.files[node.path].chunks
    moved = workspace / "archive" / Path(node.path).name
    moved.parent.mkdir(exist_ok=True)
    path.rename(moved)
    new_path = moved.relative_to(workspace).as_posix()
    seq = brain.log.last_seq
    report = brain.sync(workspace)
    assert (report.files_moved, report.files_indexed, report.files_removed) == (1, 0, 0)
    assert report.edges_created == 0 and "1 moved" in sync_text(report)
    assert FileMoved(
        old_path=node.path, path=new_path, content_hash=g.files[new_path].content_hash
    ) in [r.event for r in brain.log.read(seq + 1)]
    g = brain.graph
    assert node.path not in g.files and g.files[new_path].chunks == ids
    assert {g.nodes[i].path for i in ids} == {new_path}
    assert g.nodes[u].source.startswith(new_path + "#L")
    assert weights(g) == learned

    with Brain.create(tmp_path / "fresh", clock=TickClock()) as fresh:
        fresh.sync(workspace)
        assert file_view(fresh.graph) == file_view(g)
    assert brain.sync(workspace).events == 0


def test_a_renamed_file_keeps_its_facts_and_a_new_file_at_its_old_path_gets_new_ids(
    brain: Brain, workspace: Path
) -> None:
    mem = brain.state("memory")
    old = "memory/2026-11-10.md"
    facts = {i: mem.facts[i].content for i in mem.files[old].ids}
    assert facts
    ids = brain.graph.files[old].chunks
    (workspace / "archive").mkdir()
    (workspace / old).rename(workspace / "archive" / "2026-11-10.md")
    (workspace / "memory" / "2026-11-30.md").write_text("# Nov 30\n\nA quiet day.\n")
    report = brain.sync(workspace)
    assert (report.files_moved, report.files_indexed) == (1, 1)
    mem = brain.state("memory")
    assert mem.files["archive/2026-11-10.md"].ids == tuple(facts)
    assert old not in mem.files and mem.size == len({i for f in mem.files.values() for i in f.ids})
    assert all(
        mem.active(i) is not None and mem.facts[i].path.startswith("archive/") for i in facts
    )
    # a new file where the moved one was: fresh ids, never one the moved file still holds
    (workspace / old).write_text("# Nov 10, again\n\nSomething else entirely.\n")
    brain.sync(workspace)
    g = brain.graph
    assert g.files["archive/2026-11-10.md"].chunks == ids
    assert not set(g.files[old].chunks) & set(ids)
    assert all(g.nodes[i].path == old for i in g.files[old].chunks)


def test_a_revised_chunk_leaves_its_route_until_an_outcome_credits_its_new_text(
    brain: Brain, workspace: Path
) -> None:
    cold = brain.query(QUESTION, top=10)
    used = cold.fired[0]
    rid = brain.learn(1.0, trace_id=cold.trace_id, used=[used], source="self").route

    def live() -> dict[str, float]:
        return live_credits(brain.state("routes").routes[rid], brain.graph)

    assert brain.query(QUESTION).fired == [used] and live()[used] == 1.0
    node = brain.graph.nodes[used]
    path = workspace / node.path
    path.write_text(path.read_text().replace(node.text, typo(node.text), 1))
    assert brain.sync(workspace).chunks_revised == 1 and used in brain.graph.nodes
    assert brain.state("routes").routes[rid].credits[used] == 1.0 and used not in live()
    walked = brain.query(QUESTION, top=10)
    assert brain.trace(walked.trace_id).route_mode == "explore" and used in walked.fired
    brain.learn(1.0, trace_id=walked.trace_id, used=[used])
    assert live()[used] == 1.0 and brain.query(QUESTION).fired == [used]
