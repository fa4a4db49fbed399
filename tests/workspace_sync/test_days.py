"""The day a chunk is about."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, strategies as st

from workspace_sync.days import NO_DAY, chunk_day

EPOCH = dt.date(1970, 1, 1)


@given(st.dates(dt.date(1900, 1, 1), dt.date(2200, 12, 31)))
def test_a_daily_file_is_about_its_day(day: dt.date) -> None:
    want = (day - EPOCH).days
    assert chunk_day(f"memory/{day.isoformat()}.md") == want
    assert chunk_day("notes/standups.md", f"Standups > {day.isoformat()}") == want
    assert chunk_day("log.md", "", f"- {day.isoformat()} 09:14 deployed") == want


def test_the_file_name_wins_and_other_chunks_have_no_day() -> None:
    assert chunk_day("memory/2026-11-20.md", "2025-01-01") == (dt.date(2026, 11, 20) - EPOCH).days
    assert chunk_day("runbooks/rollback.md", "Rollback", "kubectl rollout undo") == NO_DAY
    assert chunk_day("notes/a.md", "", "released after 2026-11-20") == NO_DAY
    assert chunk_day("memory/2026-13-45.md") == NO_DAY
    assert chunk_day("memory/v12026-11-200.md") == NO_DAY
