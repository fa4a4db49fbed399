"""Typed memory on a brain: facts recorded from Markdown, retain, recall (scores, access
decay, IDF damping, associative paths, time filters), rebuilds and bad input."""

from __future__ import annotations

import datetime as dt
import math
import os
import shutil
import stat
from pathlib import Path

import pytest

from ocb.brain import Brain
from ocb.engine.dates import DAY_NS, day_start
from ocb.memory.recall import access_decay, co_weights, composite, spread
from ocb.settings import Memory
from ocb_events.errors import InputError, WorkspaceError
from ocb_events.schema import FactsRecorded, RecallTraced
from projections import memory
from replay import rebuild
from tests.ocb.memory.support import LOGS, NOW, clock
from workspace_sync import FileText, scan_workspace


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for rel, text in LOGS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def mb(tmp_path: Path, ws: Path) -> Brain:
    b, _ = Brain.init(tmp_path / "brain", ws, clock=clock())
    return b


def facts_by_content(b: Brain) -> dict[str, memory.Fact]:
    mem = b.state("memory")
    return {mem.facts[i].content: mem.facts[i] for ff in mem.files.values() for i in ff.ids}


def test_init_records_the_facts_of_retain_sections_and_bank_pages(mb: Brain) -> None:
    facts = facts_by_content(mb)
    assert len(facts) == 9
    f = facts["the orders endpoint takes 4s because of a missing index"]
    assert (f.kind, f.entities, f.source, f.day) == (
        "B",
        ("database", "slow-endpoint"),
        "memory/2026-11-01.md#L4",
        "2026-11-01",
    )
    assert f.time_ns == day_start(dt.date(2026, 11, 1))
    assert facts["Friday deploys are risky"].source == "bank/opinions.md#L2"
    mem = mb.state("memory")
    assert mem.entities["slow-endpoint"].name == "slow-endpoint"
    assert mem.co["database"] == {"slow-endpoint": 1}
    assert mem.co["slow-endpoint"] == {"app": 1, "database": 1}


def test_an_edited_bullet_is_a_revision_and_a_removed_one_is_retired(mb: Brain, ws: Path) -> None:
    path = ws / "memory/2026-11-20.md"
    text = path.read_text()
    text = text.replace("O(c=0.8) @Peter", "O(c=0.7) @Peter").replace(
        "- W @Alice @billing: Alice joins the billing team next week\n", ""
    )
    path.write_text(text)
    before = facts_by_content(mb)
    mb.sync(ws)
    after = facts_by_content(mb)
    op = after["prefers short written updates over meetings"]
    assert op.id == before["prefers short written updates over meetings"].id
    assert (op.confidence, op.revisions) == (0.7, 1)
    gone = before["Alice joins the billing team next week"]
    assert mb.state("memory").facts[gone.id].retired_seq > 0
    assert "alice" not in mb.state("memory").entities


def test_retain_appends_to_todays_log_and_records_the_fact(mb: Brain, ws: Path) -> None:
    report = mb.retain(
        "Sarah is leaving the company next month",
        kind="B",
        entities=["Sarah", "project"],
        salience=0.95,
    )
    log = ws / "memory/2026-11-22.md"
    assert log.read_bytes() == (
        b"# 2026-11-22\n\n## Retain\n"
        b"- B(s=0.95) @Sarah @project: Sarah is leaving the company next month\n"
    )
    assert (report.created, report.source) == (True, "memory/2026-11-22.md#L4")
    fact = mb.state("memory").facts[report.fact_id]
    assert (fact.salience, fact.entities, fact.day) == (0.95, ("project", "Sarah"), "2026-11-22")
    seq = mb.log.last_seq
    again = mb.retain("Sarah is leaving  the company next month", kind="B", entities=["Sarah"])
    assert (again.created, again.fact_id) == (False, report.fact_id)
    assert mb.log.last_seq == seq


def test_retain_into_an_existing_log_only_inserts_its_line(mb: Brain, ws: Path) -> None:
    path = ws / "memory/2026-11-22.md"
    path.write_bytes(b"# 2026-11-22\n\n## Retain\n- W: first\n\n## Log\nkeep me\n")
    mb.retain("second", kind="W")
    assert (
        path.read_bytes()
        == b"# 2026-11-22\n\n## Retain\n- W: first\n- W: second\n\n## Log\nkeep me\n"
    )


def test_retain_rejects_bad_input_and_records_nothing(mb: Brain, ws: Path) -> None:
    seq = mb.log.last_seq
    for kw in ({"kind": "Q"}, {"salience": 1.5}, {"kind": "O", "confidence": -0.1}):
        with pytest.raises(InputError):
            mb.retain("x", **kw)  # type: ignore[arg-type]
    with pytest.raises(InputError):
        mb.retain("x", kind="W", confidence=0.5)
    assert mb.log.last_seq == seq and not (ws / "memory/2026-11-22.md").exists()


def test_the_composite_score_and_access_decay_follow_the_formula() -> None:
    s = Memory()
    assert composite(0.5, 0.8, 0.25, s) == pytest.approx(0.4 * 0.5 + 0.35 * 0.8 + 0.25 * 0.25)
    assert access_decay(0, 0, NOW, s) == 0.25
    assert access_decay(NOW, 1, NOW, s) == pytest.approx(1 + 0.1 * math.log(2))
    week = access_decay(NOW - 7 * DAY_NS, 3, NOW, s)
    assert week == pytest.approx(0.5 * (1 + 0.1 * math.log(4)))
    assert access_decay(NOW - 14 * DAY_NS, 3, NOW, s) < week


def test_recall_resets_access_decay_of_what_it_returned(mb: Brain) -> None:
    first = mb.recall("orders endpoint missing index", k=1)
    (hit,) = first.results
    assert hit.access == 0.25
    assert hit.score == pytest.approx(0.4 * hit.match + 0.35 * hit.salience + 0.25 * 0.25, abs=1e-6)
    again = mb.recall("orders endpoint missing index", k=1)
    assert again.results[0].id == hit.id
    assert again.results[0].access == pytest.approx(1 + 0.1 * math.log(2), abs=1e-3)
    acc = mb.state("memory").access[hit.id]
    assert acc.count == 2


def test_recall_is_recorded_as_a_trace_unless_asked_not_to(mb: Brain) -> None:
    seq = mb.log.last_seq
    ans = mb.recall("deploy", k=3)
    (rec,) = list(mb.log.read(seq + 1, seq + 1))
    assert isinstance(rec.event, RecallTraced) and rec.event.trace_id == ans.trace_id
    assert [h.fact_id for h in rec.event.hits] == [r.id for r in ans.results]
    mb.recall("deploy", k=3, record=False)
    assert mb.log.last_seq == seq + 1


def test_idf_damps_a_hub_entity() -> None:
    # "hub" co-occurs with "a" as often as "b" does, but is in many more facts
    mem = memory.initial()
    specs = [("a", "hub"), ("a", "b")] + [("hub", f"x{i}") for i in range(20)]
    mem = _fold(mem, specs)
    weights = dict(co_weights(mem, "a"))
    assert weights["b"] > 2 * weights["hub"]
    got = spread(mem, {"a": 1.0}, 1, Memory(min_activation=0.0))
    assert got["b"][0] > got["hub"][0]
    assert got["b"][0] == pytest.approx(0.5)  # the strongest neighbour gets hop_decay


def test_spreading_stops_at_the_activation_floor_and_the_entity_cap() -> None:
    mem = _fold(memory.initial(), [("a", "b"), ("b", "c"), ("c", "d")])
    deep = spread(mem, {"a": 1.0}, 3, Memory(min_activation=0.0))
    assert deep["d"][1] == ("a", "b", "c", "d")
    assert "d" not in spread(mem, {"a": 1.0}, 3, Memory(min_activation=0.2))
    assert len(spread(mem, {"a": 1.0}, 3, Memory(min_activation=0.0, max_active_entities=2))) == 2


def _fold(mem: memory.State, pairs: list[tuple[str, ...]]) -> memory.State:
    from ocb_events.schema import FactSpec, Record

    facts = tuple(
        FactSpec(
            id=f"f{i + 1}",
            kind="W",
            content=" ".join(p),
            entities=p,
            start_line=i + 1,
            end_line=i + 1,
            text_hash=str(i),
            salience=0.5,
        )
        for i, p in enumerate(pairs)
    )
    ev = FactsRecorded(path="x.md", content_hash="h", facts=facts)
    return memory.evolve(mem, Record(seq=1, ts=1, actor="t", event=ev))


def test_associative_recall_reaches_facts_through_entities_and_says_how(mb: Brain) -> None:
    flat = mb.recall("performance regressed", k=10, record=False)
    assert [r.text for r in flat.results] == ["app performance regressed after the 3.2 release"]
    deep = mb.recall("performance regressed", k=10, depth=2, record=False)
    via = {r.text: r.via for r in deep.results}
    assert via == {
        "app performance regressed after the 3.2 release": (),
        "the mobile client calls the orders endpoint on every screen": ("app",),
        "the orders endpoint takes 4s because of a missing index": ("app", "slow-endpoint"),
        "nightly backups finish at 2am": ("app", "slow-endpoint", "database"),
    }
    backups = next(r for r in deep.results if r.text.startswith("nightly"))
    # hop_decay * activation (1 * 0.5 * 0.5) * reach damping of @database (2 facts)
    assert backups.match == pytest.approx(0.5 * 0.25 * math.log(2) / math.log(3), abs=1e-6)
    one_hop = mb.recall("performance regressed", k=10, depth=1, record=False)
    assert "nightly backups finish at 2am" not in {r.text for r in one_hop.results}


def test_entity_kind_and_opinion_recall(mb: Brain) -> None:
    ans = mb.recall(entities=["peter"], kinds=["O"], record=False)
    (op,) = ans.results
    assert (op.kind, op.confidence, op.entities) == ("O", 0.8, ("Peter",))
    with pytest.raises(InputError, match="unknown entity") as err:
        mb.recall(entities=["Petr"])
    assert err.value.hint == "did you mean Peter?"


def test_time_filters(mb: Brain) -> None:
    def texts(**kw: object) -> list[str]:
        return sorted(r.text for r in mb.recall(record=False, **kw).results)  # type: ignore[arg-type]

    assert texts(between=("2026-11-21", "2026-11-21"), kinds=["B"]) == [
        "the Friday deploy was rolled back"
    ]
    assert len(texts(since="7d", kinds=["B", "W", "S"])) == 4
    around = mb.recall("what happened around Nov 2", record=False)
    assert around.date_phrase == "around Nov 2"
    assert {r.day for r in around.results} == {"2026-11-01"}
    with pytest.raises(InputError, match="cannot read `since`"):
        mb.recall(since="soon")
    with pytest.raises(InputError, match="before it starts"):
        mb.recall(between=("2026-11-21", "2026-11-01"))


def test_a_question_that_is_only_a_date_recalls_the_facts_of_that_day(brain: Brain) -> None:
    mem = brain.state("memory")
    day = sorted((-mem.facts[i].salience, i) for i in mem.facts if mem.facts[i].day == "2026-11-05")
    assert len(day) == 5
    got = brain.recall("what happened around Nov 5", record=False)
    assert got.date_phrase == "around Nov 5" and len(got.results) == 10
    assert [r.id for r in got.results[:5]] == [i for _, i in day]  # the day first, by salience
    assert {r.day for r in got.results[5:]} <= {"2026-11-03", "2026-11-06", "2026-11-07"}
    for question in ("anything new on Nov 5?", "Nov 5", "what did happen on 2026-11-05"):
        assert sorted(r.id for r in brain.recall(question, record=False).results) == sorted(
            i for _, i in day
        ), question
    # a question with a subject still needs its words to match
    pool = brain.recall("pool exhausted around Nov 5", record=False)
    assert 0 < len(pool.results) < 5


def test_min_salience_and_budget(mb: Brain) -> None:
    ans = mb.recall(min_salience=0.85, record=False)
    assert [r.text for r in ans.results] == ["the Friday deploy was rolled back"]
    small = mb.recall(k=10, max_chars=60, record=False)
    assert small.context_chars <= 60 and small.dropped == 9 - len(small.results)
    assert small.dropped > 0


def test_rebuilding_from_the_log_and_markdown_gives_the_same_recall(
    mb: Brain, tmp_path: Path, ws: Path
) -> None:
    mb.recall("deploy", k=3)
    mb.retain("the deploy freeze starts Dec 20", kind="W", entities=["deploy"])
    path = mb.path
    mb.close()
    queries = [("deploy", 2), ("billing Peter", 1), ("orders", 0)]

    def answers() -> list[list[tuple[str, str, float]]]:
        with Brain(path, clock=clock(), writer=False) as b:
            out = []
            for q, depth in queries:
                got = b.recall(q, k=5, depth=depth, record=False).results
                out.append([(r.id, r.source, r.score) for r in got])
            return out

    before = answers()
    shutil.rmtree(path / "snapshots")
    shutil.rmtree(path / "cache", ignore_errors=True)
    assert answers() == before
    with Brain(path, writer=False) as b:
        full = rebuild(b.log, ["memory"])["memory"]
        assert memory.snapshot(full) == memory.snapshot(b.state("memory"))


def test_a_file_that_changes_while_it_is_read_is_read_again(mb: Brain, ws: Path) -> None:
    rel = "memory/2026-11-21.md"
    files, skipped = scan_workspace(ws)
    on_disk = next(f for f in files if f.path == rel)
    # the sync was handed a version of the file that is no longer on disk
    stale = FileText(rel, on_disk.text + "## Retain\n- W: stale\n", "stale-hash")
    mb.sync(ws, scanned=([stale if f.path == rel else f for f in files], skipped))
    contents = {f.content for f in facts_by_content(mb).values()}
    assert "stale" not in contents  # what is recorded is what is on disk
    assert mb.state("memory").files[rel].content_hash == on_disk.content_hash
    assert mb.graph.files[rel].content_hash == on_disk.content_hash


def test_retain_needs_a_workspace(tmp_path: Path) -> None:
    with Brain.create(tmp_path / "empty", clock=clock()) as b:
        with pytest.raises(WorkspaceError, match="no workspace"):
            b.retain("x")


def test_recall_as_of_a_past_point_sees_the_facts_of_then(mb: Brain) -> None:
    seq = mb.log.last_seq
    mb.retain("a brand new fact about kittens", kind="W")
    path = mb.path
    mb.close()
    with Brain(path, as_of=seq) as past:
        assert past.recall("kittens", record=False).results == []
        assert past.recall("kittens").trace_id == ""  # the past records nothing
    with Brain(path, writer=False) as now:
        assert [r.text for r in now.recall("kittens", record=False).results] == [
            "a brand new fact about kittens"
        ]


def test_weak_matches_rank_after_strong_ones_whatever_their_salience_or_access(
    mb: Brain,
) -> None:
    # the Friday deploy fact is salient (0.9) and gets recalled again and again
    for _ in range(3):
        mb.recall("Friday deploy rolled back", k=1)
    ans = mb.recall("deploys are risky", k=5, record=False)
    first, *rest = ans.results
    assert first.text == "Friday deploys are risky"
    weak = next(r for r in rest if r.text == "the Friday deploy was rolled back")
    # with the bare formula the recalled, salient fact would be on top
    assert weak.score > first.score and weak.match < 0.5 * first.match


def test_the_fact_index_is_cached_on_disk_and_a_damaged_cache_is_rebuilt(mb: Brain) -> None:
    want = [(r.id, r.score) for r in mb.recall("orders endpoint", record=False).results]
    (cache,) = sorted((mb.path / "cache").glob("facts-*.idx"))
    assert cache.name == f"facts-{mb.state('memory').facts_seq}-{mb.store.embedder().id}.idx"
    path = mb.path
    mb.close()
    with Brain(path, clock=clock(), writer=False) as b:
        assert [(r.id, r.score) for r in b.recall("orders endpoint", record=False).results] == want
    cache.write_bytes(b"garbage")
    with Brain(path, clock=clock(), writer=False) as b:
        assert [(r.id, r.score) for r in b.recall("orders endpoint", record=False).results] == want


def test_retain_takes_an_estimated_salience_and_writes_it(mb: Brain, ws: Path) -> None:
    seen = []

    def estimate(kind: str, content: str, entities: list[str]) -> float:
        seen.append((kind, content, entities))
        return 0.42

    report = mb.retain(
        "the cache warms in 3 minutes", kind="W", entities=["cache"], estimate=estimate
    )
    assert seen == [("W", "the cache warms in 3 minutes", ["cache"])]
    assert report.bullet == "- W(s=0.42) @cache: the cache warms in 3 minutes"
    assert mb.state("memory").facts[report.fact_id].salience == 0.42
    with pytest.raises(InputError, match="estimated salience 7 is outside"):
        mb.retain("another fact", estimate=lambda *_: 7.0)


# --------------------------------------------------------------------------- writes


TODAY = "memory/2026-11-22.md"


@pytest.mark.parametrize("mode", [0o644, 0o664])
def test_retain_keeps_the_mode_of_an_existing_daily_log(mb: Brain, ws: Path, mode: int) -> None:
    (ws / TODAY).write_text("# 2026-11-22\n\nStandup.\n")
    os.chmod(ws / TODAY, mode)
    mb.retain("the standup moved to ten", kind="W")
    assert stat.S_IMODE((ws / TODAY).stat().st_mode) == mode
    assert (ws / TODAY).read_text().endswith("## Retain\n- W: the standup moved to ten\n")


def test_retain_creates_todays_log_with_the_umask_mode(mb: Brain, ws: Path) -> None:
    old = os.umask(0o022)
    try:
        mb.retain("the standup moved to ten", kind="W")
    finally:
        os.umask(old)
    assert stat.S_IMODE((ws / TODAY).stat().st_mode) == 0o644  # not a temp file's 0600


def test_retain_writes_through_a_symlinked_daily_log(mb: Brain, ws: Path) -> None:
    (ws / "journal").mkdir()
    (ws / "journal/today.md").write_text("# 2026-11-22\n")
    os.symlink("../journal/today.md", ws / TODAY)
    report = mb.retain("the standup moved to ten", kind="W")
    assert os.readlink(ws / TODAY) == "../journal/today.md"
    assert (ws / "journal/today.md").read_text() == (
        "# 2026-11-22\n\n## Retain\n- W: the standup moved to ten\n"
    )
    assert (report.created, report.source) == (True, f"{TODAY}#L4")


def test_retain_into_a_log_linked_out_of_the_workspace_is_refused(
    mb: Brain, ws: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# elsewhere\n")
    os.symlink(outside, ws / TODAY)
    seq = mb.log.last_seq
    with pytest.raises(WorkspaceError) as err:
        mb.retain("the standup moved to ten", kind="W")
    assert err.value.message == (
        f"will not write {TODAY}: it is a symlink to {outside}, outside the workspace;"
        " nothing was written"
    )
    assert outside.read_text() == "# elsewhere\n" and os.readlink(ws / TODAY) == str(outside)
    assert mb.log.last_seq == seq
