"""The date phrases of a question, read against fixed clocks."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, strategies as st

from ocb.engine.dates import DAY_NS, date_in_query, day_start

NOW = day_start(dt.date(2024, 1, 10)) + 15 * 3600 * 10**9
"""Wednesday 2024-01-10, 15:00 UTC."""


def window(query: str, now: int = NOW, around: int = 3) -> tuple[str, str] | None:
    w = date_in_query(query, now, around).window
    if w is None:
        return None
    day = lambda ns: str(dt.date(1970, 1, 1) + dt.timedelta(days=ns // DAY_NS))  # noqa: E731
    return day(w.start_ns), day(w.end_ns) if w.end_ns is not None else "open"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("what did Ana ship on October 13, 2023?", ("2023-10-13", "2023-10-14")),
        ("what did Gina find on 1 February, 2023?", ("2023-02-01", "2023-02-02")),
        ("what broke around Nov 27", ("2023-11-24", "2023-12-01")),
        ("deploys since 2023-12-20", ("2023-12-20", "open")),
        ("what did we do in May 2023", ("2023-05-01", "2023-06-01")),
        ("what changed in December 2023?", ("2023-12-01", "2024-01-01")),
        ("the beginning of November 2022", ("2022-11-01", "2022-11-11")),
        ("mid-March 2023 incidents", ("2023-03-11", "2023-03-21")),
        ("at the end of February 2024", ("2024-02-21", "2024-03-01")),
        ("where did Joanna go in summer 2021?", ("2021-06-01", "2021-09-01")),
        ("what snowed in winter 2023", ("2022-12-01", "2023-03-01")),
        ("what did she do in 2022?", ("2022-01-01", "2023-01-01")),
        ("what did John do the week before August 3, 2023?", ("2023-07-27", "2023-08-03")),
        ("the week after August 3, 2023", ("2023-08-04", "2023-08-11")),
        ("the puppy she got two weeks before August 11, 2023", ("2023-07-25", "2023-08-01")),
        ("three days after May 2, 2023", ("2023-05-05", "2023-05-06")),
        ("on the Sunday before October 25, 2022", ("2022-10-23", "2022-10-24")),
        ("last weekend before April 10, 2023", ("2023-04-03", "2023-04-10")),
        ("the week of 2023-08-09", ("2023-08-07", "2023-08-14")),
        ("yesterday's deploy", ("2024-01-09", "2024-01-10")),
        ("what happened last week", ("2024-01-03", "2024-01-11")),
        ("how do I roll back a deploy", None),
        ("what may happen next", None),
    ],
)
def test_date_phrases_read_against_a_fixed_clock(
    query: str, expected: tuple[str, str] | None
) -> None:
    assert window(query) == expected


def test_a_month_without_a_year_is_the_last_such_month_by_the_clock() -> None:
    assert window("which spot did Joanna visit in May?") == ("2023-05-01", "2023-06-01")
    assert window("what did we plan in January?") == ("2024-01-01", "2024-02-01")
    june = day_start(dt.date(2024, 6, 30))
    assert window("which spot did Joanna visit in May?", june) == ("2024-05-01", "2024-06-01")


def test_a_day_without_a_year_is_the_one_nearest_the_clock() -> None:
    assert window("on Dec 30") == ("2023-12-30", "2023-12-31")
    assert window("on Jan 12") == ("2024-01-12", "2024-01-13")


def test_the_phrase_is_reported_and_taken_out_of_the_question() -> None:
    got = date_in_query("what did Maria donate in December 2023?", NOW, 3)
    assert got.phrase == "December 2023"
    assert got.rest == "what did Maria donate in  ?"


@given(st.dates(dt.date(1990, 1, 1), dt.date(2090, 12, 31)), st.integers(0, 86_399))
def test_relative_phrases_move_with_the_clock(today: dt.date, second: int) -> None:
    now = day_start(today) + second * 10**9
    w = date_in_query("what happened yesterday", now, 3).window
    assert w is not None and w.end_ns == day_start(today)
    assert w.start_ns == day_start(today - dt.timedelta(days=1))
    shifted = date_in_query(f"the week before {today.isoformat()}", 0, 3).window
    assert shifted is not None and shifted.end_ns == day_start(today)
    assert shifted.start_ns == day_start(today - dt.timedelta(days=7))
