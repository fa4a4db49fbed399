"""Maintenance as events: decay, prune, merge, split, connect, scale, anchor, dry runs."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.checks.brain import run_doctor
from ocb.cli.app import app
from ocb.engine.embed import HashEmbedder
from ocb.engine.learning import group_by_source
from ocb.settings import Indexing, Maintenance
from ocb.upkeep.maintain import OPS, anchor, maintain, parse_ops
from ocb.upkeep.structure import split_pieces
from ocb.upkeep.weights import NS_PER_DAY, View, decay_factor, decide_decay, decide_scale
from ocb.wire import answer_json, maintenance_json
from ocb_events.clock import TickClock
from ocb_events.errors import InputError
from ocb_events.schema import (
    AuthoritySet,
    EdgeDelta,
    EdgeRef,
    EdgesCreated,
    EdgesRemoved,
    EdgesUpdated,
    MaintenanceRan,
    NodesEmbedded,
    NodesMerged,
    NodeSplit,
    Record,
)
from projections import graph as graph_projection
from replay import PROJECTIONS, rebuild
from replay.verify import FAIL
from tests.golden_files import check
from tests.ocb.graphs import build
from tests.ocb.upkeep.support import COPY, DUPLICATE, ROLLBACK, copy_and_ask

FIRST_TS = 1_767_225_600 * 10**9  # the ts of the built brain's first record
DAY = NS_PER_DAY
runner = CliRunner()


def log_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((path / "log").glob("*.seg")))


def weights(brain: Brain) -> dict[tuple[str, str], float]:
    return {(s, t): e.weight for s, ts in brain.graph.out.items() for t, e in ts.items()}


def set_weight(brain: Brain, source: str, target: str, w: float) -> None:
    delta = w - brain.graph.out[source][target].weight
    ev = EdgesUpdated(
        updates=group_by_source([EdgeDelta(source=source, target=target, delta=delta)]),
        rule="test",
        cause_seq=0,
    )
    brain.store.record([ev], "test", expected_seq=brain.log.last_seq)


def recorded(brain: Brain, seq: int) -> list[Record]:
    return list(brain.log.read(seq))


def assert_healthy(brain: Brain) -> None:
    """Doctor passes and every projection equals a full rebuild, byte for byte."""
    full = rebuild(brain.log)
    for name in sorted(PROJECTIONS):
        live = PROJECTIONS[name].snapshot(brain.state(name))
        assert live == PROJECTIONS[name].snapshot(full[name]), name
    failed = [c for c in run_doctor(brain.path) if c.status == FAIL]
    assert failed == []


@pytest.fixture
def timed(built: Path) -> Iterator[tuple[Brain, TickClock]]:
    """The built brain with a stopped clock shared by its log and its maintenance, 30
    days after its first record."""
    clock = TickClock(start_ns=FIRST_TS + 30 * DAY, step_ns=0)
    with Brain(built, clock=clock) as b:
        yield b, clock


# --------------------------------------------------------------------------- ops


def test_ops_parse_in_their_fixed_order_and_unknown_ops_are_refused() -> None:
    assert parse_ops("prune, decay") == ["decay", "prune"]
    assert parse_ops([]) == list(OPS) and parse_ops(["scale,merge"]) == ["merge", "scale"]
    with pytest.raises(InputError, match="unknown maintenance op 'defrag'") as exc:
        parse_ops("decay,defrag")
    assert exc.value.hint == "use one or more of: merge, split, decay, connect, scale, prune"


def test_bad_input_is_refused_and_nothing_is_recorded(brain: Brain) -> None:
    before = log_bytes(brain.path)
    with pytest.raises(InputError, match="unknown maintenance op"):
        maintain(brain.store, ["decay", "vacuum"])
    with pytest.raises(InputError, match="half_life_days must be above 0, got -3"):
        maintain(brain.store, ["decay"], half_life_days=-3)
    with pytest.raises(InputError, match="prune_below must be at least 0"):
        maintain(brain.store, ["prune"], prune_below=-0.1)
    with pytest.raises(InputError, match="unknown node 'runbooks/rollback.md::99'") as exc:
        anchor(brain.store, "canonical", node_ids=["runbooks/rollback.md::99"])
    assert exc.value.hint.startswith("did you mean runbooks/rollback.md::")
    with pytest.raises(InputError, match="unknown file 'runbooks/rollbak.md'") as exc:
        anchor(brain.store, "canonical", path="runbooks/rollbak.md")
    assert exc.value.hint.startswith(f"did you mean {ROLLBACK}")
    with pytest.raises(InputError, match="unknown authority 'sacred'"):
        anchor(brain.store, "sacred", path=ROLLBACK)
    with pytest.raises(InputError, match="nothing to anchor"):
        anchor(brain.store, "canonical")
    assert log_bytes(brain.path) == before


# --------------------------------------------------------------------------- decay


def test_decay_halves_weights_after_a_half_life_canonical_slower_constitutional_never(
    timed: tuple[Brain, TickClock],
) -> None:
    brain, clock = timed
    anchor(brain.store, "constitutional", path="runbooks/deploy.md")
    anchor(brain.store, "canonical", node_ids=[f"{ROLLBACK}::1"])
    auth = {n: brain.graph.nodes[n].authority for n in brain.graph.nodes}
    before, seq = weights(brain), brain.log.last_seq
    report = maintain(
        brain.store, ["decay"], clock=clock
    )  # first run: 30 days since the first record
    recs = recorded(brain, seq + 1)
    run, update = recs[0].event, recs[1].event
    assert isinstance(run, MaintenanceRan) and run.op == "decay" and len(recs) == 2
    assert isinstance(update, EdgesUpdated) and update.rule == "decay"
    assert update.cause_seq == recs[0].seq == report.ops[0].seq
    assert dict((p.key, p.value) for p in run.params)["factor"] == 0.5
    after = weights(brain)
    kinds = set()
    for (u, v), w in before.items():
        pair = {auth[u], auth[v]}
        kind = next((a for a in ("constitutional", "canonical") if a in pair), "overlay")
        kinds.add(kind)
        expected = {"constitutional": w, "canonical": w * math.sqrt(0.5), "overlay": w * 0.5}
        assert after[(u, v)] == pytest.approx(expected[kind], abs=1e-12)
        if kind != "canonical":
            assert after[(u, v)] == expected[kind]  # exact: a half, or untouched
    assert kinds == {"constitutional", "canonical", "overlay"}
    # canonical loses 1 - sqrt(1/2) of its weight per half-life
    u, v = next((u, v) for u, v in before if auth[u] == "canonical" and auth[v] == "overlay")
    assert 1 - after[(u, v)] / before[(u, v)] == pytest.approx(1 - math.sqrt(0.5))
    clock.advance(30 * DAY)
    maintain(brain.store, ["decay"], clock=clock)
    assert weights(brain)[(u, v)] == pytest.approx(before[(u, v)] * 0.5)
    seq = brain.log.last_seq
    again = maintain(brain.store, ["decay"], clock=clock)  # no time has passed
    assert brain.log.last_seq == seq and again.ops[0].events == 0
    assert_healthy(brain)


@given(
    elapsed=st.lists(st.integers(0, 3650 * DAY), min_size=2, max_size=2).map(sorted),
    half_life=st.floats(0.01, 1000),
)
def test_the_decay_factor_falls_with_time_and_composes(
    elapsed: list[int], half_life: float
) -> None:
    a, b = elapsed
    fa, fb = decay_factor(a, half_life), decay_factor(b, half_life)
    assert 0.0 <= fb <= fa <= 1.0 and decay_factor(0, half_life) == 1.0
    assert decay_factor(a + b, half_life) == pytest.approx(fa * fb, rel=1e-9, abs=1e-300)
    assert decay_factor(round(half_life * DAY), half_life) == pytest.approx(0.5)


NODES = {f"n{i}": f"text {i}" for i in range(5)}
AUTHORITY = st.sampled_from(["constitutional", "canonical", "overlay"])


@given(
    ws=st.lists(st.floats(-1, 1), min_size=20, max_size=20),
    auth=st.lists(AUTHORITY, min_size=5, max_size=5),
    days=st.floats(0, 400),
)
def test_decay_never_grows_a_weight_nor_touches_constitutional_edges(
    ws: list[float], auth: list[str], days: float
) -> None:
    pairs = [(a, b) for a in NODES for b in NODES if a != b]
    g = build(NODES, [(a, b, w) for (a, b), w in zip(pairs, ws, strict=True)])
    for i, n in enumerate(NODES):
        ev = AuthoritySet(authority=auth[i], node_ids=(n,))  # type: ignore[arg-type]
        g = graph_projection.evolve(g, Record(seq=g.seq + 1, ts=0, actor="t", event=ev))
    before = {(a, b): g.out[a][b].weight for a, b in pairs}
    view = View(
        graph=g,
        seq=g.seq,
        now_ns=int(days * DAY),
        first_ts=0,
        settings=Maintenance(),
        indexing=Indexing(),
        embedder=HashEmbedder(8),
        vectors=lambda ids: np.zeros((len(ids), 8), np.float32),
        fired=[],
    )
    for i, ev in enumerate(decide_decay(view).events, g.seq + 1):
        g = graph_projection.evolve(g, Record(seq=i, ts=0, actor="t", event=ev))
    for (a, b), w in before.items():
        after = g.out[a][b].weight
        assert abs(after) <= abs(w) and after * w >= 0
        if "constitutional" in (g.nodes[a].authority, g.nodes[b].authority):
            assert after == w


def test_decay_of_no_visible_size_records_nothing_and_the_time_carries_over(built: Path) -> None:
    clock = TickClock(start_ns=FIRST_TS + 60 * 10**9, step_ns=0)  # a minute after init
    with Brain(built, clock=clock) as brain:
        seq, before = brain.log.last_seq, weights(brain)
        report = maintain(brain.store, ["decay"], clock=clock)
        assert brain.log.last_seq == seq and report.ops[0].events == 0
        assert report.ops[0].summary.startswith("nothing to decay: 0.0007 day(s)")
        clock.advance(2 * 3600 * 10**9)  # two hours more: measured from init, not a minute ago
        report = maintain(brain.store, ["decay"], clock=clock)
        factor = report.ops[0].params["factor"]
        assert report.ops[0].events == 2 and factor == decay_factor(7260 * 10**9, 30.0)
        after = weights(brain)
        assert all(after[k] == pytest.approx(w * factor) for k, w in before.items())


@settings(max_examples=40)
@given(
    ws=st.lists(st.floats(-1, 1), min_size=20, max_size=20),
    seconds=st.one_of(st.integers(0, 7200), st.integers(0, 400 * 86_400)),
    budget=st.floats(0.1, 5),
)
def test_maintenance_never_records_an_update_that_changes_nothing(
    ws: list[float], seconds: int, budget: float
) -> None:
    pairs = [(a, b) for a in NODES for b in NODES if a != b]
    g = build(NODES, [(a, b, w) for (a, b), w in zip(pairs, ws, strict=True)])
    view = View(
        graph=g,
        seq=g.seq,
        now_ns=seconds * 10**9,
        first_ts=0,
        settings=Maintenance(budget=budget),
        indexing=Indexing(),
        embedder=HashEmbedder(8),
        vectors=lambda ids: np.zeros((len(ids), 8), np.float32),
        fired=[],
    )
    for plan in (decide_decay(view), decide_scale(view)):
        for ev in plan.events:
            assert isinstance(ev, EdgesUpdated)
            for d in ev.deltas:
                w = g.out[d.source][d.target].weight
                assert max(-1.0, min(1.0, w + d.delta)) != w
        assert plan.events or all(c.before == c.after for c in plan.changes)


# --------------------------------------------------------------------------- prune, scale


def test_prune_removes_dead_edges_only(brain: Brain) -> None:
    g = brain.graph
    a, b, c = f"{ROLLBACK}::3", f"{ROLLBACK}::4", f"{ROLLBACK}::5"
    fix = brain.inject("CORRECTION", "Never roll back with kubectl", targets=[c]).node_id
    anchor(brain.store, "constitutional", node_ids=["runbooks/deploy.md::1"])
    d = "runbooks/deploy.md::1"
    d2 = sorted(g.out[d])[0]
    set_weight(brain, a, b, 0.01)  # dead
    set_weight(brain, b, a, 0.1)  # dormant, alive
    set_weight(brain, b, c, -0.005)  # dead, inhibitory
    set_weight(brain, fix, c, -0.015)  # a correction's veto
    set_weight(brain, d, d2, 0.001)  # touches a constitutional node
    seq = brain.log.last_seq
    report = maintain(brain.store, ["prune"])
    recs = recorded(brain, seq + 1)
    assert [type(r.event) for r in recs] == [MaintenanceRan, EdgesRemoved]
    removed = recs[1].event
    assert isinstance(removed, EdgesRemoved) and removed.cause_seq == seq + 1
    assert set(removed.edges) == {EdgeRef(source=a, target=b), EdgeRef(source=b, target=c)}
    assert report.ops[0].counts == {"removed": 2, "protected": 2}
    out = brain.graph.out
    assert b not in out[a] and c not in out[b]
    assert out[b][a].weight == pytest.approx(0.1) and d2 in out[d]
    assert out[fix][c].weight == pytest.approx(-0.015)
    assert maintain(brain.store, ["prune"]).ops[0].events == 0
    assert_healthy(brain)


def test_scale_brings_a_node_back_within_its_budget_keeping_proportions(brain: Brain) -> None:
    u = f"{ROLLBACK}::4"
    targets = sorted(brain.graph.out[u])
    assert len(targets) >= 2
    for i, t in enumerate(targets):
        set_weight(brain, u, t, 0.9 - 0.1 * i)
    before = {t: brain.graph.out[u][t].weight for t in targets}
    seq = brain.log.last_seq
    maintain(brain.store, ["scale"], budget=1.0)
    update = recorded(brain, seq + 2)[0].event
    assert isinstance(update, EdgesUpdated) and update.rule == "scale"
    assert update.cause_seq == seq + 1
    after = {t: brain.graph.out[u][t].weight for t in targets}
    assert sum(after.values()) == pytest.approx(1.0)
    k = 1.0 / sum(before.values())
    assert all(after[t] == pytest.approx(before[t] * k) for t in targets)
    assert maintain(brain.store, ["scale"], budget=1.0).ops[0].events == 0


# --------------------------------------------------------------------------- connect


def detach(brain: Brain, node: str) -> None:
    g = brain.graph
    refs = [EdgeRef(source=node, target=t) for t in sorted(g.out.get(node, {}))]
    refs += [EdgeRef(source=s, target=node) for s in g.incoming(node)]
    brain.store.record([EdgesRemoved(edges=tuple(refs), cause_seq=0)], "test", expected_seq=g.seq)


def test_connect_links_nodes_without_edges_to_their_most_similar_chunks(brain: Brain) -> None:
    teach = brain.inject("TEACHING", "Rollbacks are announced in #lumen-deploys").node_id
    fix = brain.inject(
        "CORRECTION", "Never roll back without paging", targets=["runbooks/rollback.md::0"]
    ).node_id
    detach(brain, teach)
    detach(brain, fix)
    seq = brain.log.last_seq
    report = maintain(brain.store, ["connect"])
    recs = recorded(brain, seq + 1)
    assert [type(r.event) for r in recs] == [MaintenanceRan, EdgesCreated]
    created = recs[1].event
    assert isinstance(created, EdgesCreated) and created.cause == "connect"
    g = brain.graph
    assert len(g.out[teach]) == 3 and len(g.incoming(teach)) == 3
    assert set(g.out[teach]) == set(g.incoming(teach))
    assert all(g.nodes[t].kind == "chunk" for t in g.out[teach])
    assert fix not in g.out and len(g.incoming(fix)) == 3  # a correction only receives
    assert report.ops[0].counts == {"lonely": 2, "connected": 2, "edges": 9}
    assert maintain(brain.store, ["connect"]).ops[0].events == 0
    assert_healthy(brain)


# --------------------------------------------------------------------------- merge


def duplicate(brain: Brain, workspace: Path) -> list[tuple[str, str]]:
    """``copy_and_ask``, then merge: the (kept, absorbed) pairs."""
    copy_and_ask(brain, workspace)
    seq = brain.log.last_seq
    report = maintain(brain.store, ["merge"])
    recs = recorded(brain, seq + 1)
    run = recs[0].event
    assert isinstance(run, MaintenanceRan) and run.op == "merge"
    merges = [r.event for r in recs if isinstance(r.event, NodesMerged)]
    assert all(m.cause_seq == recs[0].seq for m in merges)
    assert isinstance(recs[-1].event, NodesEmbedded)
    assert report.ops[0].counts["merged"] == len(merges)
    return [(m.kept, m.absorbed) for m in merges]


def test_merge_keeps_both_sources_citable_and_the_duplicate_out_of_results(
    brain: Brain, workspace: Path
) -> None:
    pairs = duplicate(brain, workspace)
    assert (f"{ROLLBACK}::1", f"{COPY}::1") in pairs
    g = brain.graph
    kept = g.nodes[f"{ROLLBACK}::1"]
    assert kept.source == f"{ROLLBACK}#L5-L13" and kept.also == (f"{COPY}#L5-L13",)
    alias = g.nodes[f"{COPY}::1"]
    assert alias.text == "" and f"{COPY}::1" not in g.out and not g.incoming(f"{COPY}::1")
    answer = brain.query(DUPLICATE, top=10)
    ids = [h.id for h in answer.results]
    assert kept.id in ids and alias.id not in ids
    hit = next(h for h in answer.results if h.id == kept.id)
    assert (hit.source, hit.also) == (f"{ROLLBACK}#L5-L13", (f"{COPY}#L5-L13",))
    assert answer_json(answer)["results"][ids.index(kept.id)]["also"] == [f"{COPY}#L5-L13"]
    assert maintain(brain.store, ["merge"]).ops[0].events == 0  # idempotent
    assert_healthy(brain)


def test_query_json_lists_merged_sources_only_when_there_are_some(brain: Brain) -> None:
    answer = brain.query(DUPLICATE, top=2)
    assert all("also" not in r for r in answer_json(answer)["results"])
    answer.results = [msgspec.structs.replace(answer.results[0], also=("b.md#L3-L4",))]
    assert answer_json(answer)["results"][0]["also"] == ["b.md#L3-L4"]


def test_a_merged_duplicate_moves_with_its_file_and_leaves_with_its_text(
    brain: Brain, workspace: Path
) -> None:
    duplicate(brain, workspace)
    copy = workspace / COPY
    copy.write_text("# Preface\n\nRead me first.\n\n" + copy.read_text())
    brain.sync(workspace)
    g = brain.graph
    assert g.nodes[f"{COPY}::1"].start_line == 9
    assert g.nodes[f"{ROLLBACK}::1"].also == (f"{COPY}#L9-L17",)
    texts = [n.text for n in g.nodes.values() if n.path == COPY]
    assert not any("API 5xx rate is above 1%" in t for t in texts)  # not resurrected
    assert brain.sync(workspace).events == 0
    assert_healthy(brain)
    copy.write_text(copy.read_text().replace("above 1%", "above 2%"))
    brain.sync(workspace)
    g = brain.graph
    assert f"{COPY}::1" not in g.nodes and g.nodes[f"{ROLLBACK}::1"].also == ()
    assert sum("above 2%" in n.text for n in g.nodes.values()) == 1
    assert_healthy(brain)


@pytest.mark.parametrize("rewrite", [False, True], ids=["revised", "rewritten"])
def test_when_the_kept_chunk_changes_its_duplicates_come_back_once(
    brain: Brain, workspace: Path, tmp_path: Path, rewrite: bool
) -> None:
    duplicate(brain, workspace)
    kept = brain.graph.nodes[f"{ROLLBACK}::1"]
    rewritten = "## When to roll back\n\nNothing to see here."
    new = rewritten if rewrite else kept.text.replace("above 1%", "above 3%")
    rollback = workspace / ROLLBACK
    rollback.write_text(rollback.read_text().replace(kept.text, new))
    brain.sync(workspace)
    g = brain.graph
    assert f"{COPY}::1" not in g.nodes
    # an edit keeps the chunk (its id, edges and new text), a rewrite replaces it
    assert rewrite or (g.nodes[kept.id].text == new and g.nodes[kept.id].also == ())
    assert not rewrite or kept.id not in g.nodes
    assert brain.graph.files[COPY].content_hash == ""  # stale: re-read on the next sync
    assert_healthy(brain)
    brain.sync(workspace)
    assert brain.sync(workspace).events == 0
    g = brain.graph
    merged = {(g.nodes[a].path, g.nodes[a].start_line) for a in g.merged}
    merged |= {(g.nodes[k].path, g.nodes[k].start_line) for k in g.merged.values()}
    assert merged == {(ROLLBACK, 1), (COPY, 1)}  # the first chunks' merge still holds
    with Brain.create(tmp_path / "fresh", clock=TickClock()) as fresh:
        fresh.sync(workspace)
        view = sorted(
            (n.path, n.start_line, n.end_line, n.text)
            for n in fresh.graph.nodes.values()
            if (n.path, n.start_line) not in merged
        )
    ours = sorted(
        (n.path, n.start_line, n.end_line, n.text)
        for n in g.nodes.values()
        if (n.path, n.start_line) not in merged
    )
    assert ours == view
    assert sum(n.path == COPY and "above 1%" in n.text for n in g.nodes.values()) == 1
    assert_healthy(brain)


def test_removing_the_duplicate_file_drops_the_citation(brain: Brain, workspace: Path) -> None:
    duplicate(brain, workspace)
    (workspace / COPY).unlink()
    brain.sync(workspace)
    g = brain.graph
    assert g.nodes[f"{ROLLBACK}::1"].also == () and not any(
        n.path == COPY for n in g.nodes.values()
    )
    assert g.merged == {}
    assert_healthy(brain)


def test_constitutional_chunks_are_never_merged(brain: Brain, workspace: Path) -> None:
    anchor(brain.store, "constitutional", path=ROLLBACK)
    copy_and_ask(brain, workspace)
    report = maintain(brain.store, ["merge"])
    assert not any(ROLLBACK in c.source or ROLLBACK in c.target for c in report.ops[0].changes)
    assert all(
        n.authority == "constitutional" for n in brain.graph.nodes.values() if n.path == ROLLBACK
    )
    assert all(not n.also for n in brain.graph.nodes.values() if n.path == ROLLBACK)


# --------------------------------------------------------------------------- split


def test_split_pieces_cut_whole_lines() -> None:
    text = "\n".join(f"line {i} " + "x" * 40 for i in range(10))
    pieces = split_pieces(text, 120, markdown=False)
    lines = text.split("\n")
    assert len(pieces) > 1 and [p.start_line for p in pieces][0] == 1
    assert all(p.text == "\n".join(lines[p.start_line - 1 : p.end_line]) for p in pieces)
    assert [i for p in pieces for i in range(p.start_line, p.end_line + 1)] == list(range(1, 11))
    assert len(split_pieces("x" * 500, 100)) == 1  # one line cannot be cut


def test_split_cuts_oversized_chunks_into_exact_line_ranges(brain: Brain, workspace: Path) -> None:
    g = brain.graph
    big = sorted(
        n
        for n in g.nodes
        if len(g.nodes[n].text) > 500 and len(split_pieces(g.nodes[n].text, 250)) > 1
    )
    edges_of = {n: (set(g.out.get(n, {})), set(g.incoming(n))) for n in big}
    seq = brain.log.last_seq
    report = maintain(brain.store, ["split"], split_over_chars=500, split_chars=250)
    recs = recorded(brain, seq + 1)
    splits = [r.event for r in recs if isinstance(r.event, NodeSplit)]
    assert sorted(s.node_id for s in splits) == big and report.ops[0].counts["split"] == len(big)
    assert all(s.cause_seq == seq + 1 for s in splits) and isinstance(recs[-1].event, NodesEmbedded)
    g = brain.graph
    for s in splits:
        assert s.node_id not in g.nodes and len(s.parts) >= 2
        path = s.node_id.rsplit("::", 1)[0]
        lines = (workspace / path).read_text().splitlines()
        out, inc = edges_of[s.node_id]
        split_away = {x for x in out | inc if x in edges_of}
        for part in s.parts:
            node = g.nodes[part.id]
            assert node.text == "\n".join(lines[node.start_line - 1 : node.end_line])
            assert len(node.text) <= 500 or "\n" not in node.text
            assert (out - split_away) <= set(g.out[part.id])  # every part routes on
        first = s.parts[0].id
        assert (inc - split_away) <= set(g.incoming(first))  # routes in enter at the top
        assert not (inc - split_away) & set(g.incoming(s.parts[1].id))
        ids = [p.id for p in s.parts]
        entry = g.files[path].chunks
        assert entry[entry.index(ids[0]) : entry.index(ids[0]) + len(ids)] == tuple(ids)
    assert (
        maintain(brain.store, ["split"], split_over_chars=500, split_chars=250).ops[0].events == 0
    )
    assert_healthy(brain)
    rollback = workspace / ROLLBACK
    rollback.write_text(rollback.read_text() + "\n## Later\n\nA new line.\n")
    brain.sync(workspace)
    texts = [n.text for n in brain.graph.nodes.values() if n.path == ROLLBACK]
    covered = [line for t in texts for line in t.splitlines() if line.strip()]
    assert sorted(covered) == sorted(x for x in rollback.read_text().splitlines() if x.strip())
    assert_healthy(brain)


# --------------------------------------------------------------------------- all ops, dry runs


def test_a_dry_run_records_nothing_and_plans_what_a_run_then_does(
    brain: Brain, workspace: Path
) -> None:
    copy_and_ask(brain, workspace)
    detach(brain, brain.inject("TEACHING", "Rollbacks are announced in #lumen-deploys").node_id)
    opts = {"split_over_chars": 500, "split_chars": 250, "budget": 0.5, "prune_below": 0.25}
    clock = TickClock(start_ns=FIRST_TS + 90 * DAY, step_ns=0)
    before = log_bytes(brain.path)
    plan = maintain(brain.store, dry_run=True, clock=clock, **opts)
    assert log_bytes(brain.path) == before
    assert plan.dry_run and all(o.seq == 0 for o in plan.ops) and plan.events > 0
    done = maintain(brain.store, clock=clock, **opts)
    summary = [(o.op, o.events, o.summary, o.counts) for o in done.ops]
    assert [(o.op, o.events, o.summary, o.counts) for o in plan.ops] == summary
    assert [o.op for o in done.ops] == list(OPS) and all(o.events for o in done.ops)
    seqs = [o.seq for o in done.ops]
    for seq in seqs:
        run = recorded(brain, seq)[0].event
        assert isinstance(run, MaintenanceRan)
    assert brain.log.last_seq == seqs[-1] + done.ops[-1].events - 1
    assert_healthy(brain)
    js = maintenance_json(done)
    assert list(js) == ["dry_run", "now_ns", "events", "ops"]
    assert list(js["ops"][0]) == [
        "op",
        "seq",
        "events",
        "summary",
        "params",
        "counts",
        "changes",
    ]


def test_anchoring_a_file_reaches_its_future_chunks(brain: Brain, workspace: Path) -> None:
    report = anchor(brain.store, "canonical", path=str(workspace / ROLLBACK))
    assert report.path == ROLLBACK and report.seq == brain.log.last_seq
    assert len(report.node_ids) == len(brain.graph.files[ROLLBACK].chunks)
    assert anchor(brain.store, "canonical", path=ROLLBACK).seq == 0  # nothing to change
    rollback = workspace / ROLLBACK
    rollback.write_text(rollback.read_text() + "\n## Later\n\nA new line.\n")
    brain.sync(workspace)
    assert {n.authority for n in brain.graph.nodes.values() if n.path == ROLLBACK} == {"canonical"}
    assert_healthy(brain)


# --------------------------------------------------------------------------- CLI


def ocb(*args: object) -> tuple[int, str, str]:
    res = runner.invoke(app, [str(a) for a in args], prog_name="ocb")
    return res.exit_code, res.stdout, res.stderr


def test_cli_maintain_and_anchor(built: Path) -> None:
    before = log_bytes(built)
    code, out, err = ocb(
        "maintain", "--brain", built, "--ops", "scale,prune", "--budget", "0.5", "--dry-run"
    )
    assert (code, err) == (0, "") and log_bytes(built) == before
    assert out.startswith("dry run, nothing recorded: 2 operation(s) would record 2 event(s)\n")
    check("cli/maintain.txt", out)
    code, out, _ = ocb("maintain", "--brain", built, "--ops", "prune", "--dry-run", "--json")
    got = json.loads(out)
    assert code == 0 and got["dry_run"] and [o["op"] for o in got["ops"]] == ["prune"]
    code, out, _ = ocb("maintain", "--brain", built, "--ops", "scale", "--budget", "0.5")
    assert code == 0 and out.startswith("1 operation(s) recorded 2 event(s)\nscale: ")
    assert "[seq 44]" in out
    code, out, _ = ocb(
        "anchor", "--brain", built, "--file", ROLLBACK, "--authority", "constitutional"
    )
    assert (code, out) == (
        0,
        f"authority constitutional set on 12 node(s) and file {ROLLBACK} "
        "(its future chunks too) at seq 46\n",
    )
    code, out, _ = ocb(
        "anchor",
        "--brain",
        built,
        "--node",
        f"{ROLLBACK}::1",
        "--authority",
        "constitutional",
        "--json",
    )
    assert json.loads(out) == {
        "authority": "constitutional",
        "node_ids": [],
        "path": "",
        "seq": 0,
    }


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["maintain", "--ops", "decay,vacuum"], "error: unknown maintenance op 'vacuum'"),
        (["maintain", "--half-life-days", "-1"], "error: maintenance.half_life_days must be"),
        (["anchor", "--node", "nope", "--authority", "canonical"], "error: unknown node 'nope'"),
        (["anchor", "--file", ROLLBACK, "--authority", "holy"], "error: unknown authority 'holy'"),
        (["anchor", "--authority", "canonical"], "error: nothing to anchor"),
    ],
)
def test_cli_bad_input_is_one_error_exit_1_and_nothing_recorded(
    built: Path, args: list[str], pattern: str
) -> None:
    before = log_bytes(built)
    code, out, err = ocb(*args, "--brain", built)
    lines = err.splitlines()
    assert code == 1 and out == "" and len(lines) == 2
    assert lines[0].startswith(pattern) and lines[1].startswith("hint: ")
    assert log_bytes(built) == before
