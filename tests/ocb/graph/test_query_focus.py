"""What a query shows: chunks dated inside the date it names first (against the
brain's clock, or the time of an ``--as-of`` point), a named speaker's lines, the
expansion of a query by its best matches' terms, and a cut at a line boundary."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pytest

from ocb.brain import Brain
from ocb.engine.dates import day_start
from ocb.engine.search import SearchIndex, day_closeness
from ocb_events.clock import TickClock
from workspace_sync.days import NO_DAY

DEPLOY = "- 10:00 Ana: deployed the billing service to production\n"


def day_file(ws: Path, day: str, body: str) -> None:
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    (ws / "memory" / f"{day}.md").write_text(f"# {day}\n\n{body}", encoding="utf-8")


def at(day: dt.date) -> TickClock:
    return TickClock(start_ns=day_start(day) + 9 * 3600 * 10**9, step_ns=1_000)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    for day in ("2026-11-05", "2026-11-12", "2026-11-19"):
        day_file(w, day, DEPLOY)
    return w


def days_of(answer_sources: list[str]) -> list[str]:
    return [s.split("/")[1][:10] for s in answer_sources]


def test_chunks_dated_inside_the_named_date_come_first(ws: Path, tmp_path: Path) -> None:
    b, _ = Brain.init(tmp_path / "b", ws, clock=at(dt.date(2026, 11, 20)))
    with b:
        asked = {"on Nov 12, 2026": "2026-11-12", "in the week of 2026-11-19": "2026-11-19",
                 "yesterday": "2026-11-19", "around Nov 6": "2026-11-05",
                 "the week after Nov 5, 2026": "2026-11-12"}  # fmt: skip
        first, flat = {}, {}
        for phrase in asked:
            q = f"what did Ana deploy {phrase}"
            first[phrase] = days_of([h.source for h in b.query(q, top=3, record=False).results])[0]
            off = b.query(q, top=3, record=False, date_weight=0).results
            flat[phrase] = days_of([h.source for h in off])[0]
        assert first == asked
        assert flat != asked  # the same text on every day: without the boost one day wins


def test_relative_dates_are_read_at_the_as_of_point(ws: Path, tmp_path: Path) -> None:
    path = tmp_path / "b"
    b, _ = Brain.init(path, ws, clock=at(dt.date(2026, 11, 13)))
    first = b.store.horizon
    b.close()
    with Brain(path, clock=at(dt.date(2026, 11, 20))) as now:
        (ws / "memory" / "2026-11-19.md").write_text(
            "# 2026-11-19\n\n" + DEPLOY + "- 10:01 Bo: ok\n"
        )
        now.sync(ws)
        got = now.query("what did Ana deploy yesterday", top=1, record=False)
        assert days_of([h.source for h in got.results]) == ["2026-11-19"]
    with Brain(path, as_of=first) as past:
        got = past.query("what did Ana deploy yesterday", top=1)
        assert days_of([h.source for h in got.results]) == ["2026-11-12"]


def test_a_named_speaker_s_lines_are_shown_first_with_exact_sources(tmp_path: Path) -> None:
    w = tmp_path / "ws"
    standup = [
        "## Standup (10:00)",
        "",
        "- 10:00 Ana: I rolled back the billing deploy",
        "- 10:00 Bo: I fixed the pager rota",
        "- 10:00 Ana: the cache is warm again",
    ]
    day_file(w, "2026-11-05", "\n".join(standup) + "\n")
    b, _ = Brain.init(tmp_path / "b", w, clock=at(dt.date(2026, 11, 6)))
    with b:
        got = b.query("what did Ana roll back?", top=5, record=False)
        lines = (w / "memory" / "2026-11-05.md").read_text().splitlines()
        cited = [h.source.removeprefix("memory/2026-11-05.md#") for h in got.results]
        assert cited == ["L5-L5", "L7-L7", "L6-L6"]
        for h in got.results:
            a, z = (int(x) for x in h.source.split("#L")[1].split("-L"))
            assert h.text == "\n".join(lines[a - 1 : z])
        assert got.context.startswith("[memory/2026-11-05.md#L5-L5]\n- 10:00 Ana: I rolled back")
        whole = b.query("what did Ana roll back?", top=5, record=False, passages=False)
        assert [h.source for h in whole.results] == ["memory/2026-11-05.md#L1-L7"]


def test_the_best_match_that_does_not_fit_is_cut_at_a_line_boundary(tmp_path: Path) -> None:
    w = tmp_path / "ws"
    (w / "notes").mkdir(parents=True)
    (w / "notes" / "a.md").write_text("# Rollback\n\n" + "".join(
        f"- step {i}: roll back the billing service\n" for i in range(6)))  # fmt: skip
    b, _ = Brain.init(tmp_path / "b", w, clock=at(dt.date(2026, 11, 6)))
    with b:
        got = b.query("roll back billing", top=5, record=False, max_context_chars=120, max_hops=0)
        assert len(got.results) == 1
        hit = got.results[0]
        assert hit.cut and not hit.fired and hit.source == "notes/a.md#L3-L4"
        assert hit.text.split("\n") == ["- step 0: roll back the billing service",
                                        "- step 1: roll back the billing service"]  # fmt: skip


def test_a_query_is_widened_by_the_terms_of_its_best_matches() -> None:
    texts = [
        "rollback runbook: kubectl rollout undo",
        "kubectl rollout undo deploy api",
        "pager rota",
    ]
    ids = ["a", "b", "c"]
    index = SearchIndex.from_texts(ids, texts, np.zeros((3, 2), np.float32))
    lex = index.lexical("rollback runbook")
    assert lex[1] == 0
    fb = index.feedback("rollback runbook", lex, docs=1, width=5)
    assert fb[1] > 0 and fb[2] == 0 and float(fb.max()) == pytest.approx(1.0)


def test_day_closeness_fades_outside_the_window() -> None:
    days = np.array([100, 104, 106, 110, 120, NO_DAY], dtype=np.int32)
    got = day_closeness(days, 104, 107, 7)  # days 104..106, fading over a week
    assert got.tolist() == pytest.approx([0.5, 1.0, 1.0, 0.5, 0.0, 0.0])


def test_an_index_keeps_its_days_and_an_older_cache_file_is_built_again(tmp_path: Path) -> None:
    index = SearchIndex.from_texts(
        ["a", "b"], ["x", "y"], np.zeros((2, 2), np.float32), [5, NO_DAY]
    )
    index.save(tmp_path / "i.idx")
    back = SearchIndex.load(tmp_path / "i.idx")
    assert back is not None and back.days.tolist() == [5, NO_DAY]
    older = tmp_path / "old.idx"
    data = (tmp_path / "i.idx").read_bytes().replace(b"\xa4days", b"\xa4dayz", 1)
    older.write_bytes(data)
    assert SearchIndex.load(older) is None
