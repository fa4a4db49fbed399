"""The analytics store: derived from the log, caught up incrementally to exactly what a
build from scratch holds, agreeing with the graph projection, never trusted when damaged."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ocb.brain import Brain
from ocb.upkeep.maintain import maintain
from ocb_events.clock import TickClock
from ocb_events.codec import TraceHead
from ocb_events.errors import AnalyticsError
from ocb_events.log import SegmentLog
from ocb_events.schema import STOP, EdgesUpdated, OutcomeRecorded, QueryTraced
from ocb_events.segments import list_segments, packed
from replay import behind
from replay.analytics import AnalyticsStore, _open, _schema_sql
from replay.behind import CHUNK, MIN_CHUNK, batch_size
from replay.columns import column
from replay.store_load import _SEP, _joined, insert, store_names
from replay.tables import TABLES, VARCHARS
from replay.trace_rows import Names, PackedTrace, read_rows
from tests.ocb.support import ops, run_op, workspaces, write_workspace
from tests.ocb_events.golden_log import GOLDEN
from tests.pg_server import PgServer

QUESTIONS = ["how do I roll back a bad deploy", "who is on call", "postgres pool size"]


def contents(store: AnalyticsStore) -> dict[str, list[tuple[Any, ...]]]:
    """Every view's rows in a canonical order."""
    out = {}
    for name, cols in TABLES.items():
        names = ", ".join(c for c, _ in cols)
        out[name] = store.query(f"SELECT {names} FROM {name} ORDER BY ALL").rows
    return out


def build(
    path: Path, brain: Brain, chunk: int = 20_000, *, bulk: bool = True
) -> dict[str, list[tuple[Any, ...]]]:
    with AnalyticsStore(path, bulk=bulk) as store:
        store.catch_up(brain.log, chunk=chunk)
        assert store.last_seq == brain.log.last_seq
        return contents(store)


def digest(rows: dict[str, list[tuple[Any, ...]]]) -> str:
    h = hashlib.sha256()
    for name, got in rows.items():
        h.update(repr((name, got)).encode())
    return h.hexdigest()


GOLDEN_CONTENTS = "0352fe5fbcbd28ef21a4518a55b2f7afca6617bf1035133a98510e54b6358bb4"
"""The digest of every view's rows folded from the golden log (``digest``), as the
row-by-row fold wrote them before rows were gathered as columns."""


def test_the_golden_log_folds_to_the_rows_it_always_did(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN, tmp_path / "log")
    with SegmentLog(tmp_path / "log", writer=False) as log:
        for bulk in (True, False):
            with AnalyticsStore(tmp_path / f"{bulk}.duckdb", bulk=bulk) as store:
                store.catch_up(log, chunk=5)
                assert digest(contents(store)) == GOLDEN_CONTENTS


@given(st.integers(0, 10**7))
def test_a_catch_up_commits_in_about_four_batches_within_bounds(total: int) -> None:
    size = batch_size(total)
    assert MIN_CHUNK <= size <= CHUNK
    batches = -(-total // size)
    if 4 * MIN_CHUNK <= total <= 4 * CHUNK:
        assert batches == 4  # each commit overlaps the next batch's fold
    else:
        assert batches <= max(4, -(-total // CHUNK))


def test_a_catch_up_is_committed_in_the_batches_of_its_size(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(behind, "MIN_CHUNK", 3)
    monkeypatch.setattr(behind, "CHUNK", 10_000)
    seen: list[tuple[int, int]] = []
    with Brain(built, writer=False) as b, AnalyticsStore(tmp_path / "a.duckdb") as store:
        store.catch_up(b.log, progress=lambda done, total: seen.append((done, total)))
        total = b.log.last_seq
    size = -(-total // 4)
    assert total > 12 and sorted({d for d, _ in seen}) == [
        min(size * k, total) for k in range(1, 5)
    ]


def test_columns_hold_the_rows_of_the_row_by_row_fold(built: Path, tmp_path: Path) -> None:
    with learned_brain(built) as b:
        b.learn(0.5, trace_id=b.query(QUESTIONS[0]).trace_id, rule="pg")
        bulk = build(tmp_path / "bulk.duckdb", b, chunk=7)
        rows = build(tmp_path / "rows.duckdb", b, chunk=7, bulk=False)
        assert bulk == rows
        assert len(bulk["deltas"]) > 20 and any(r[4] == STOP for r in bulk["deltas"])


def test_a_compressed_log_gives_the_rows_of_the_row_by_row_fold(
    built: Path, tmp_path: Path
) -> None:
    """Sealed segments in the container whose trace bodies lie apart (``OCBSEGZ2``):
    the store reads each trace's body apart from its record, and holds the rows of the
    row-by-row fold, which reads whole records."""
    with learned_brain(built) as b:
        b.learn(0.5, trace_id=b.query(QUESTIONS[0]).trace_id, rule="pg")
        records = list(b.log.read())
    with SegmentLog(tmp_path / "log", segment_bytes=6000) as log:
        for rec in records:
            log.append([rec.event], actor=rec.actor)
    boxes = [packed(s.path) for s in list_segments(tmp_path / "log")]
    sealed = [box for box in boxes if box is not None and box.v2]
    assert len(sealed) > 3
    got = {}
    with SegmentLog(tmp_path / "log", writer=False) as log:
        for bulk in (True, False):
            with AnalyticsStore(tmp_path / f"{bulk}.duckdb", bulk=bulk) as store:
                store.catch_up(log, chunk=50)
                got[bulk] = contents(store)
    assert got[True] == got[False]
    assert len(got[True]["steps"]) > 20 and len(got[True]["deltas"]) > 20


def test_a_log_on_postgresql_gives_the_rows_of_the_segment_log(
    built: Path, tmp_path: Path, pg_server: PgServer
) -> None:
    """The same records on PostgreSQL: the store reads its compact traces packed, as
    from segments (no record decoded whole and packed again), and holds the same rows,
    those of the row-by-row fold."""
    from ocb_events.pg import PostgresLog
    from ocb_events.pg.copy import copy_to_postgres

    with learned_brain(built) as b:
        b.learn(0.5, trace_id=b.query(QUESTIONS[0]).trace_id, rule="pg")
        seg = build(tmp_path / "seg.duckdb", b, chunk=9)
        with PostgresLog(pg_server.fresh_url()) as pg:
            copy_to_postgres(b.log, pg)
            read = list(read_rows(pg, 1, pg.last_seq, packed=True))
            traces = [r for r in read if isinstance(r.event, QueryTraced | TraceHead)]
            assert len(traces) > 3 and all(isinstance(r, PackedTrace) for r in traces)
            got = {}
            for bulk in (True, False):
                with AnalyticsStore(tmp_path / f"pg-{bulk}.duckdb", bulk=bulk) as store:
                    store.catch_up(pg, chunk=9)
                    got[bulk] = contents(store)
    assert got[True] == seg == got[False]
    assert len(seg["steps"]) > 20 and len(seg["deltas"]) > 20


@settings(max_examples=25, deadline=None)
@given(
    workspaces,
    st.lists(st.lists(ops, min_size=1, max_size=6), min_size=1, max_size=4),
    st.integers(1, 40),
)
def test_caught_up_incrementally_equals_built_from_scratch(
    files: list[list[tuple[str, str]]], parts: list[list[tuple[Any, ...]]], chunk: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_workspace(root / "ws", files)
        clock = TickClock()
        b, _ = Brain.init(root / "brain", root / "ws", clock=clock)
        with b:
            last: dict[str, Any] = {}
            with AnalyticsStore(root / "inc.duckdb") as inc:
                for part in parts:
                    inc.catch_up(b.log, chunk=chunk)
                    for op in part:
                        run_op(b, op, clock, last)
                inc.catch_up(b.log, chunk=chunk)
                incremental = contents(inc)
            assert build(root / "scratch.duckdb", b) == incremental
            assert build(root / "rows.duckdb", b, bulk=False) == incremental
            check_present(incremental, b)


def check_present(rows: dict[str, list[tuple[Any, ...]]], b: Brain) -> None:
    """The ``edges`` and ``nodes`` tables hold the graph projection's present, and the
    newest change of every edge in ``deltas`` ends at its current weight."""
    g = b.graph
    edges = {(s, t): w for s, t, w, *_ in rows["edges"]}
    assert edges == {(s, t): e.weight for s, ts in g.out.items() for t, e in ts.items()}
    nodes = {r[0]: r for r in rows["nodes"]}
    assert set(nodes) == set(g.nodes)
    assert all(nodes[i][9] == g.stop.get(i, 0.0) for i in g.nodes)
    newest: dict[tuple[str, str], Any] = {}
    for seq, ord_, _, s, t, _before, after, *_ in rows["deltas"]:
        newest[(s, t)] = after  # rows are ordered by seq, ord
        del seq, ord_
    for (s, t), after in newest.items():
        if t == STOP:
            assert after == g.stop.get(s, 0.0) or s not in g.nodes
        else:
            assert after == edges.get((s, t))


def learned_brain(built: Path) -> Brain:
    b = Brain(built, clock=TickClock(start_ns=1_800_000_000_000_000_000))
    for i in range(6):
        answer = b.query(QUESTIONS[i % 3], chat_id=f"c{i % 2}")
        b.learn(1.0 if i % 3 else -1.0, trace_id=answer.trace_id, rule="pg")
    b.inject(
        "CORRECTION", "Never roll back without paging the on-call", chat_id="c0", all_fired=True
    )
    maintain(b.store, "decay,prune", clock=TickClock(start_ns=b.log.last_ts + 10**14))
    return b


def test_every_view_holds_the_records_of_the_log(built: Path, tmp_path: Path) -> None:
    with learned_brain(built) as b:
        records = list(b.log.read())
        with AnalyticsStore(tmp_path / "a.duckdb") as store:
            assert store.catch_up(b.log) == len(records)
            assert store.catch_up(b.log) == 0  # up to date: nothing folded
            count = store.query("SELECT count(*), max(seq) FROM events").rows[0]
            assert count == (len(records), b.log.last_seq)
            traces = [r for r in records if isinstance(r.event, QueryTraced)]
            got = store.query("SELECT seq, query, fired FROM traces ORDER BY seq").rows
            assert got == [(r.seq, r.event.query, len(r.event.fired)) for r in traces]
            outcomes = [r for r in records if isinstance(r.event, OutcomeRecorded)]
            got = store.query(
                "SELECT o.seq, o.reward, t.query FROM outcomes o "
                "JOIN traces t ON t.seq = o.trace_seq ORDER BY o.seq"
            ).rows
            by_id = {r.event.trace_id: r.event.query for r in traces}
            assert got == [(r.seq, r.event.reward, by_id[r.event.trace_id]) for r in outcomes]
            updates = [
                (r.seq, d.source, t, delta)
                for r in records
                if isinstance(r.event, EdgesUpdated)
                for d in r.event.updates
                for t, delta in zip(d.targets, d.deltas, strict=True)
            ]
            got = store.query(
                "SELECT seq, source, target, delta FROM deltas "
                "WHERE event = 'edges_updated' ORDER BY seq, ord"
            ).rows
            assert got == updates
            clipped = store.query(
                "SELECT count(*) FROM deltas WHERE event = 'edges_updated' AND "
                "abs(after - greatest(-1, least(1, before + delta))) > 1e-12"
            ).rows
            assert clipped == [(0,)]
            assert store.query("SELECT op FROM maintenance ORDER BY seq").rows == [
                ("decay",),
                ("prune",),
            ]
            assert store.query("SELECT node_type FROM injections").rows == [("CORRECTION",)]
            check_present(contents(store), b)


def test_a_change_s_time_rule_cause_and_event_are_stored_once_per_record(
    built: Path, tmp_path: Path
) -> None:
    """``store.deltas`` holds each change's edge and weights; its record's time, rule,
    cause and event are one row of ``store.updates``, which the view joins back."""
    with learned_brain(built) as b:
        records = {r.seq: r for r in b.log.read()}
        with AnalyticsStore(tmp_path / "a.duckdb") as store:
            store.catch_up(b.log)
            views = store.query(
                "SELECT seq, ts, rule, cause_seq, event, count(*) FROM deltas GROUP BY ALL"
            ).rows
    con = _open(str(tmp_path / "a.duckdb"), read_only=True)
    try:
        stored = {r[0] for r in con.execute("DESCRIBE store.deltas").fetchall()}
        heads = con.execute("SELECT seq FROM store.updates ORDER BY seq").fetchall()
    finally:
        con.close()
    assert stored == {"seq", "ord", "source", "target", "before", "after", "delta"}
    assert [seq for seq, *_ in sorted(views)] == [seq for (seq,) in heads]  # once each
    assert len(views) > 5
    for seq, ts, rule, cause, event, _n in views:
        rec = records[seq]
        tag = type(rec.event).__struct_config__.tag
        assert (round(ts.timestamp() * 1e6), event) == (rec.ts // 1000, tag)
        if isinstance(rec.event, EdgesUpdated):
            assert (rule, cause) == (rec.event.rule, rec.event.cause_seq)


def test_the_issue_s_query_runs_over_traces(built: Path, tmp_path: Path) -> None:
    with learned_brain(built) as b, AnalyticsStore(tmp_path / "a.duckdb") as store:
        store.catch_up(b.log)
        rows = store.query(
            "SELECT date_trunc('day', ts) d, avg(context_chars) FROM traces GROUP BY d ORDER BY d"
        ).rows
        assert len(rows) == 1 and rows[0][1] > 0


def test_a_damaged_or_foreign_store_is_rebuilt_with_a_warning(built: Path, tmp_path: Path) -> None:
    path = tmp_path / "a.duckdb"
    warnings: list[str] = []
    with learned_brain(built) as b:
        expected = build(tmp_path / "ref.duckdb", b)
        path.write_bytes(b"not a database" * 100)
        with AnalyticsStore(path, warn=warnings.append) as store:
            store.catch_up(b.log)
            assert contents(store) == expected
        assert warnings and "rebuilt" in warnings[-1]
    other = tmp_path / "other"
    with Brain.create(other, clock=TickClock(start_ns=5)) as o:
        o.sync(Path(__file__).resolve().parents[2] / "examples" / "workspace")
        warnings.clear()
        with AnalyticsStore(path, warn=warnings.append) as store:
            store.catch_up(o.log)  # the store was built from the other brain's log
            assert store.query("SELECT count(*) FROM events").rows == [(o.log.last_seq,)]
        assert warnings and "another log" in warnings[-1]


def test_a_deleted_store_is_rebuilt_and_sql_errors_name_the_fix(
    built: Path, tmp_path: Path
) -> None:
    path = tmp_path / "a.duckdb"
    with learned_brain(built) as b:
        expected = build(path, b)
        path.unlink()
        assert build(path, b) == expected
        with AnalyticsStore(path) as store:
            store.catch_up(b.log)
            cases = {
                "SELECT * FROM nope": ("nope does not exist", "SHOW TABLES"),
                "SELEC 1": ("syntax error", "syntax"),
                "SELECT nothing FROM deltas": ("nothing", "DESCRIBE"),
                "DELETE FROM events": ("", "read-only"),
                "DELETE FROM store.events": ("read-only", "read-only"),
            }
            for sql, (message, hint) in cases.items():
                with pytest.raises(AnalyticsError) as err:
                    store.query(sql)
                assert message in err.value.message and "\n" not in err.value.message
                assert hint in err.value.hint
            assert store.query("SELECT count(*) FROM events").rows == [(b.log.last_seq,)]


def test_revisions_and_moves_are_rows_of_files_and_lifecycle(
    built: Path, workspace: Path, tmp_path: Path
) -> None:
    with Brain(built, clock=TickClock(start_ns=1_800_000_000_000_000_000)) as b:
        glossary = workspace / "notes" / "glossary.md"
        glossary.write_text(glossary.read_text().replace("Terms used", "Terms in use", 1))
        b.sync(workspace)
        (workspace / "notes").rename(workspace / "docs")
        b.sync(workspace)
        with AnalyticsStore(tmp_path / "a.duckdb") as store:
            store.catch_up(b.log)
            rows = store.query(
                "SELECT path, action, added, kept, removed, revised, old_path FROM files "
                "WHERE action IN ('changed', 'moved') ORDER BY seq, path"
            ).rows
            assert rows[0] == ("notes/glossary.md", "changed", 0, rows[0][3], 0, 1, "")
            moved = {r[0]: r for r in rows[1:]}
            assert moved["docs/glossary.md"][1:3] == ("moved", 0)
            assert moved["docs/glossary.md"][6] == "notes/glossary.md"
            assert sorted(moved) == sorted(p for p in b.graph.files if p.startswith("docs/"))
            life = store.query(
                "SELECT node, action, path, detail FROM lifecycle "
                "WHERE action IN ('edited', 'renamed') ORDER BY seq, node"
            ).rows
            (edited,) = [r for r in life if r[1] == "edited"]
            assert edited[2] == "notes/glossary.md"
            renamed = [r for r in life if r[1] == "renamed"]
            assert {r[0] for r in renamed} == {
                i for p, e in b.graph.files.items() if p.startswith("docs/") for i in e.chunks
            }
            assert all(r[3] == "notes/" + r[2].removeprefix("docs/") for r in renamed)
            check_present(contents(store), b)


def test_stores_of_one_process_read_side_by_side(built: Path, tmp_path: Path) -> None:
    """Two connections to one file in one process share DuckDB's database: the second
    is taken as the first confined it (it used to fail on its locked settings, and a
    store that could not read its own meta waited for the other's queries)."""
    path = tmp_path / "a.duckdb"
    with Brain(built, writer=False) as b, AnalyticsStore(path) as store:
        store.catch_up(b.log)
    first = _open(str(path), read_only=True)
    try:
        second = _open(str(path), read_only=True)
        try:
            zone = second.execute("SELECT current_setting('TimeZone')").fetchall()
            assert zone == [("UTC",)]
        finally:
            second.close()
        with Brain(built, writer=False) as b, AnalyticsStore(path, wait_s=0) as other:
            assert other.catch_up(b.log) == 0  # its meta read beside the open one
            assert other.query("SELECT count(*) FROM events").rows == [(b.log.last_seq,)]
    finally:
        first.close()


@given(
    st.lists(
        st.one_of(st.none(), st.lists(st.text(st.sampled_from("ab\x1f é"), max_size=3))),
        max_size=8,
    )
)
def test_lists_of_strings_go_to_duckdb_joined_and_come_back(lists: list[list[str] | None]) -> None:
    """A list column is handed to DuckDB as one string per row and split back there: the
    same lists, empty ones and empty strings too; lists whose items hold the separator
    go as lists."""
    joined = _joined(column(VARCHARS, lists))
    if any(_SEP in x for v in lists if v for x in v):
        assert joined is None
        return
    con = duckdb.connect()
    con.register("_b", {"x": joined})
    got = con.execute("SELECT string_split(x, chr(31))[2:] FROM _b").fetchall()
    assert [r[0] for r in got] == lists


@given(st.lists(st.lists(st.sampled_from(["a", "b", "c\x1fd", ""]), max_size=12), max_size=12))
def test_followed_ids_go_to_duckdb_as_codes_and_come_back_as_lists(lists: list[list[str]]) -> None:
    """A batch of steps hands DuckDB its followed ids as codes (a column per place when
    no step has more than ``WIDE``, else a row per id): the lists come back as given."""
    con = duckdb.connect()
    for stmt in _schema_sql():
        con.execute(stmt)
    names = Names()
    n = len(lists)
    codes = names.coded([x for v in lists for x in v])
    data: dict[str, Any] = {"seq": np.arange(n, dtype=np.int64), "step": np.ones(n, np.int64)}
    data |= {"hop": np.zeros(n, np.int64), "candidates": np.zeros(n, np.int64)}
    data |= {"node": names.coded(["a"] * n), "chosen": names.coded(["b"] * n)}
    data |= {"tier": names.coded([None] * n)}
    data |= {c: np.zeros(n) for c in ("stop_logit", "weight", "logit")}
    store_names(con, names)
    lens = np.asarray([len(v) for v in lists], dtype=np.int64)
    insert(con, "steps", data, followed=(lens, codes))
    got = con.execute("SELECT followed FROM store.steps ORDER BY seq").fetchall()
    assert [r[0] for r in got] == lists
