"""A question naming an exact day ranks that day's daily log first: the day gets the
whole date boost, the days around it at most half of it, fading over the slack, and the
words of the date phrase do not match other days' chunks that mention the month."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pytest

from ocb.brain import Brain
from ocb.engine.dates import date_in_query, day_start
from ocb.engine.search import EXACT_DAY_EDGE, day_closeness
from ocb_events.clock import TickClock
from workspace_sync.days import NO_DAY

NOW = day_start(dt.date(2026, 10, 20)) + 9 * 3600 * 10**9
LOGS = {
    3: "- 09:00 Cy: wrote the on-call handbook draft",
    4: "- 09:00 Ana: planning for the Oct 7 launch, Oct is busy\n"
    "- 10:00 Bo: booked the room for Oct 9",
    5: "- 09:00 Bo: shipped the search index",
    6: "- 09:00 Cy: cleaned up alerts",
    7: "- 09:00 Ana: launched the new dashboard to customers\n"
    "- 11:00 Bo: answered support tickets about pricing\n\n"
    "## Afternoon\n\n- 15:00 Cy: rotated the database credentials",
    8: "- 09:00 Bo: wrote the postmortem for the pricing bug",
    9: "- 09:00 Ana: Oct 9 retro: what happened on launch day, Oct 7, and since\n"
    "- 10:00 Cy: upgraded node pools",
    10: "- 09:00 Bo: on vacation",
    11: "- 09:00 Cy: a public holiday",
}


@pytest.fixture(scope="module")
def brain(tmp_path_factory: pytest.TempPathFactory) -> Brain:
    root = tmp_path_factory.mktemp("exact-day")
    ws = root / "ws"
    (ws / "memory").mkdir(parents=True)
    for d, body in LOGS.items():
        day = f"2026-10-{d:02d}"
        (ws / "memory" / f"{day}.md").write_text(f"# {day}\n\n{body}\n")
    (ws / "goals.md").write_text("# Goals\n\nOctober goals: ship the dashboard in Oct.\n")
    b, _ = Brain.init(root / "b", ws, clock=TickClock(start_ns=NOW, step_ns=1_000))
    return b


def days_of(brain: Brain, question: str, top: int = 8) -> list[str]:
    results = brain.query(question, top=top, record=False).results
    return [Path(h.source.split("#")[0]).stem for h in results]


@pytest.mark.parametrize(
    "question",
    ["what happened on Oct 7", "what happened on 2026-10-07", "October 7th", "Oct 7?"],
)
def test_the_named_day_s_chunks_rank_above_the_days_around_it(brain: Brain, question: str) -> None:
    got = days_of(brain, question)
    assert got[:2] == ["2026-10-07"] * 2, got  # its two chunks, then the rest
    assert "2026-10-07" not in got[2:]


def test_a_subject_on_an_exact_day_is_found_on_that_day(brain: Brain) -> None:
    results = brain.query("what did Bo do on Oct 7", top=5, record=False).results
    assert results[0].source == "memory/2026-10-07.md#L4-L4"


def test_a_window_around_a_day_still_weighs_the_days_around_it_alike(brain: Brain) -> None:
    got = days_of(brain, "what happened around Oct 7", top=4)
    assert got[:2] == ["2026-10-09", "2026-10-04"]  # inside the window, matching "Oct"


def test_an_exact_day_with_chunks_gives_its_neighbours_at_most_the_edge() -> None:
    days = np.array([99, 100, 101, 104, 108, 109, NO_DAY], dtype=np.int32)
    got = day_closeness(days, 101, 102, 7)
    edge = EXACT_DAY_EDGE
    assert got.tolist() == pytest.approx(
        [edge * 6 / 8, edge * 7 / 8, 1.0, edge * 5 / 8, edge * 1 / 8, 0.0, 0.0]
    )
    empty = day_closeness(days, 102, 103, 7)  # no row of that day: the days around keep it
    assert empty.tolist() == pytest.approx([5 / 8, 6 / 8, 7 / 8, 6 / 8, 2 / 8, 1 / 8, 0.0])
    wide = day_closeness(days, 101, 103, 7)  # two days: no edge
    assert wide.tolist() == pytest.approx([6 / 8, 7 / 8, 1.0, 6 / 8, 2 / 8, 1 / 8, 0.0])


def test_the_words_an_exact_day_matches_by() -> None:
    def lexical(q: str) -> tuple[bool, str]:
        when = date_in_query(q, NOW, 3)
        return when.exact_day, when.lexical(q)

    assert lexical("what happened on Oct 7") == (True, "")
    assert lexical("October 7th") == (True, "")
    assert lexical("what did Bo do on 2026-10-07") == (True, "what did Bo do")
    assert lexical("what happened yesterday") == (True, "")
    assert lexical("what happened around Oct 7") == (False, "what happened around Oct 7")
    assert lexical("what did Bo do in October 2026") == (False, "what did Bo do in October 2026")
    assert lexical("how do I roll back") == (False, "how do I roll back")
