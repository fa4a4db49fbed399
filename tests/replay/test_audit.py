"""Audits: every change of an edge with its cause chain, a node's life and accesses,
and unknown ids refused with close matches."""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import given, settings, strategies as st

from ocb.brain import Brain
from ocb.upkeep.maintain import maintain
from ocb_events.clock import TickClock
from ocb_events.errors import InputError
from ocb_events.schema import QueryTraced
from projections import graph
from replay.analytics import AnalyticsStore
from replay.audit import (
    WeightChange,
    _cause,
    _iso_s,
    _path,
    _ts,
    _weight_changes,
    audit_edge,
    audit_node,
)
from replay.audit_sql import EDGE_AUDIT_SQL, keyed_audit
from replay.store_meta import QueryResult
from replay.timetravel import iso
from tests.ocb.support import ops, run_op, workspaces, write_workspace

QUESTION = "how do I roll back a bad deploy"


def history_of(b: Brain, source: str, target: str) -> list[tuple[int, float | None, float | None]]:
    """(seq, before, after) of every record that changed the edge's weight or existence,
    found by folding the log record by record."""
    g = graph.initial()
    out = []
    for rec in b.log.read():
        e = (g.out.get(source) or {}).get(target)
        before = None if e is None else e.weight
        graph.evolve(g, rec)
        e = (g.out.get(source) or {}).get(target)
        after = None if e is None else e.weight
        if before != after or (e is not None and e.last_seq == rec.seq):
            out.append((rec.seq, before, after))
    return out


@pytest.fixture
def used(built: Path) -> Brain:
    b = Brain(built, clock=TickClock(start_ns=1_800_000_000_000_000_000))
    for i in range(5):
        answer = b.query(QUESTION, chat_id=f"c{i}")
        b.learn(1.0 if i != 2 else -1.0, trace_id=answer.trace_id, rule="pg", source="human")
    maintain(b.store, "decay", clock=TickClock(start_ns=b.log.last_ts + 30 * 86_400 * 10**9))
    return b


def chosen_edge(b: Brain) -> tuple[str, str]:
    """An edge the traversal followed (not to STOP) in the last trace."""
    trace = next(r.event for r in reversed(list(b.log.read())) if isinstance(r.event, QueryTraced))
    step = next(s for s in trace.steps if s.chosen != "<STOP>")
    return step.node, step.chosen


def test_an_edge_audit_lists_every_change_with_its_cause(used: Brain, tmp_path: Path) -> None:
    with used as b, AnalyticsStore(tmp_path / "a.duckdb") as store:
        store.catch_up(b.log)
        src, dst = chosen_edge(b)
        got = audit_edge(store, src, dst)
        expected = history_of(b, src, dst)
        assert [(c.seq, c.before, c.after) for c in got.changes] == expected
        assert got.exists and got.weight == b.graph.out[src][dst].weight
        created, *learned = got.changes
        assert created.before is None and created.cause.kind in ("record", "sync")
        recs = {r.seq: r.event for r in b.log.read()}
        pg = [c for c in learned if c.rule == "pg"]
        assert pg and all(c.cause.kind == "outcome" for c in pg)
        for c in pg:
            outcome = recs[c.cause.seq]
            assert c.cause.reward == outcome.reward  # type: ignore[union-attr]
            assert c.cause.query == QUESTION and c.cause.chat_id.startswith("c")
            trace = recs[c.cause.trace_seq]  # type: ignore[index]
            assert c.cause.trace_id == trace.trace_id  # type: ignore[union-attr]
            assert c.cause.path == [f"{s.node} -> {s.chosen}" for s in trace.steps]  # type: ignore[union-attr]
        decay = [c for c in learned if c.rule == "decay"]
        assert len(decay) == 1 and decay[0].cause.kind == "maintenance"
        assert decay[0].cause.op == "decay" and decay[0].cause.params["half_life_days"] == 30.0
        assert decay[0].after == pytest.approx(decay[0].before * decay[0].cause.params["factor"])


def test_a_stop_weight_and_an_injection_are_audited(used: Brain, tmp_path: Path) -> None:
    with used as b:
        report = b.inject(
            "CORRECTION", "Never roll back without paging on-call", chat_id="c4", all_fired=True
        )
        with AnalyticsStore(tmp_path / "a.duckdb") as store:
            store.catch_up(b.log)
            src, _ = chosen_edge(b)
            stop = audit_edge(store, src, "<STOP>")
            assert stop.kind == "stop" and stop.weight == b.graph.stop.get(src, 0.0)
            assert stop.changes and {c.rule for c in stop.changes} <= {"pg", "decay"}
            node = audit_node(store, report.node_id)
            assert node.exists and [e.action for e in node.life] == ["injected"]
            assert node.injections[0].node_type == "CORRECTION"
            assert "paging" in node.injections[0].content
            target = next(iter(b.graph.out[report.node_id]))
            inj = audit_edge(store, report.node_id, target)
            assert inj.changes[0].cause.kind == "injection"
            assert inj.changes[0].cause.node_id == report.node_id


def test_a_node_audit_follows_its_file_versions_and_accesses(
    used: Brain, workspace: Path, tmp_path: Path
) -> None:
    with used as b:
        src, _ = chosen_edge(b)
        with AnalyticsStore(tmp_path / "a.duckdb") as store:
            store.catch_up(b.log)
            a = audit_node(store, src, limit=2)
            fired = [
                r.seq
                for r in b.log.read()
                if isinstance(r.event, QueryTraced) and src in r.event.fired
            ]
            assert a.accesses == len(fired) and [x.seq for x in a.recent] == fired[::-1][:2]
            assert a.life[0].action == "created"
            node = b.graph.nodes[src]
            assert a.life[0].content_hash == b.graph.files[node.path].content_hash
            assert (a.path, a.start_line, a.end_line) == (
                node.path,
                node.start_line,
                node.end_line,
            )
            assert a.changes_out > 0
            path = workspace / node.path
            lines = path.read_text().splitlines()
            lines[node.start_line - 1] += " (revised)"
            path.write_text("\n".join(lines) + "\n")
            b.sync(workspace)
            store.catch_up(b.log)
            after = audit_node(store, src)
            actions = [e.action for e in after.life]
            assert actions[0] == "created" and len(actions) == 2
            assert actions[1] in ("edited", "removed")
            assert after.life[1].content_hash == b.graph.files[node.path].content_hash
            assert after.exists == (actions[1] == "edited")


def test_unknown_ids_are_refused_with_close_matches(used: Brain, tmp_path: Path) -> None:
    with used as b, AnalyticsStore(tmp_path / "a.duckdb") as store:
        store.catch_up(b.log)
        src, dst = chosen_edge(b)
        with pytest.raises(InputError, match="unknown node") as err:
            audit_node(store, src[:-1] + "9x")
        assert src in err.value.hint or "did you mean" in err.value.hint
        with pytest.raises(InputError, match="unknown source node") as err:
            audit_edge(store, src + "x", dst)
        assert "did you mean" in err.value.hint and src in err.value.hint
        other = next(n for n in sorted(b.graph.nodes) if n not in b.graph.out.get(src, {}))
        if other != src:
            with pytest.raises(InputError, match="unknown edge") as err:
                audit_edge(store, src, other)
            assert err.value.hint
        with pytest.raises(InputError, match="`limit` must be at least 0"):
            audit_node(store, src, limit=-1)


@settings(max_examples=12, deadline=None)
@given(workspaces, st.lists(ops, min_size=2, max_size=10))
def test_the_keyed_audit_reads_the_documented_query_s_rows(
    files: list[list[tuple[str, str]]], part: list[tuple[Any, ...]]
) -> None:
    """Every edge that changed because of a label, a retraction or anything else: the
    audit's query (changes found by key, narrower joins) gives exactly the rows of
    ``EDGE_AUDIT_SQL`` over the views, and its paths the steps of each trace."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_workspace(root / "ws", files)
        clock = TickClock()
        b, _ = Brain.init(root / "brain", root / "ws", clock=clock)
        with b, AnalyticsStore(root / "a.duckdb") as store:
            last: dict[str, Any] = {}
            for op in part:
                run_op(b, op, clock, last)
            store.catch_up(b.log)
            edges = store.query(
                "SELECT source, target, bool_or(e.type IN ('teacher_labeled', 'retracted')) "
                "FROM deltas d LEFT JOIN events e ON e.seq = d.cause_seq GROUP BY ALL "
                "ORDER BY 3 DESC, 1, 2 LIMIT 6"
            ).rows
            for source, target, _ in edges:
                documented = store.query(EDGE_AUDIT_SQL, [source, target]).rows
                codes = dict(
                    store.query(
                        "SELECT name, id FROM store.ids WHERE name IN (?, ?)", [source, target]
                    ).rows
                )
                for cached in (True, False):
                    sql = keyed_audit(codes[source], codes[target], cached=cached)
                    result = store.query(sql)
                    keyed = result.rows
                    assert [r[:-2] for r in keyed] == documented
                    assert _weight_changes(result) == _by_name(result)
                    assert not any(r[-1] for r in keyed)  # every cause is kept
                    if cached:  # what the audit gives: these rows, read by name
                        got = audit_edge(store, source, target).changes
                        assert got == _by_name(result)
                    walks = {int(r[14]): r[-2] for r in keyed if r[14] is not None}
                    assert {s: json.loads(p) if p else [] for s, p in walks.items()} == {
                        s: _path(store, {s}).get(s, []) for s in walks
                    }
            walks = store.query(
                "SELECT seq, list(node || ' -> ' || chosen ORDER BY step) FROM steps GROUP BY seq"
            ).rows
            assert dict(walks) == _path(store, {int(s) for s, _ in walks})


def _by_name(result: QueryResult) -> list[WeightChange]:
    """The changes of a keyed audit's rows, every cause read by column name."""
    recs = [dict(zip(result.columns, r, strict=True)) for r in result.rows]
    paths = {
        int(r["trace_seq"]): json.loads(r["path"])
        for r in recs
        if r["trace_seq"] is not None and r["path"] is not None
    }
    return [
        WeightChange(
            int(r["seq"]),
            _ts(r["ts"]),
            r["before"],
            r["after"],
            r["rule"],
            r["event"],
            _cause(r, paths),
        )  # fmt: skip
        for r in recs
    ]


@given(st.datetimes(min_value=datetime(1678, 1, 1), max_value=datetime(2262, 4, 11)))
def test_an_audit_s_times_read_as_iso_reads_the_record_s_ns(v: datetime) -> None:
    """The audit's shortcut for DuckDB's naive UTC timestamps gives what ``iso`` gives."""
    assert _ts(v) == iso(int(v.replace(tzinfo=UTC).timestamp() * 1_000_000) * 1000)


@given(st.datetimes(min_value=datetime(1678, 1, 1), max_value=datetime(2262, 4, 11)))
def test_the_audit_s_times_read_as_microseconds_read_as_iso(v: datetime) -> None:
    """The outcome audit's times, DuckDB's microseconds since the epoch, read as the
    row path reads DuckDB's timestamps."""
    with duckdb.connect() as con:
        got = con.execute("SELECT epoch_us(?::TIMESTAMP)", [v]).fetchone()
    assert got is not None and _iso_s(got[0] // 1_000_000) == _ts(v)
