"""Reading the dates and windows a user gives recall: ``30d``, ``2026-11-20``,
``--between A B`` and phrases inside a question ("around Nov 27", "yesterday", "last
week"), always against the brain's clock (UTC days)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

import msgspec

from ocb_events.errors import InputError
from workspace_sync.text import terms

DAY_NS = 86_400 * 10**9
_SPAN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(h|d|w|m|y)\s*$", re.IGNORECASE)
_UNIT_DAYS = {"h": 1 / 24, "d": 1, "w": 7, "m": 30, "y": 365}
_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ]
    )
    for m in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY = (
    rf"(?:(\d{{4}}-\d{{2}}-\d{{2}})|({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?"
    rf"|(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?(?:,?\s+(\d{{4}}))?)"
)
_PHRASE = re.compile(rf"\b(?:(around|about|near|on|in|since)\s+)?{_DAY}\b", re.IGNORECASE)
_WEEKDAYS = {
    d: i
    for i, d in enumerate(
        ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
    )
}
_COUNTS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_SHIFT = re.compile(
    rf"\b(?:(?:the|last|this|a)\s+)?(?:(\d{{1,2}}|one|two|three|four|five|six)\s+)?"
    rf"(days?|weeks?|weekends?|months?|{'|'.join(_WEEKDAYS)})\s+(before|after|of)\s+{_DAY}\b",
    re.IGNORECASE,
)
_MONTH_YEAR = re.compile(
    rf"\b(?:(early|beginning of|the beginning of|start of|the start of|mid|middle of|the middle of"
    rf"|late|end of|the end of)[\s-]+)?({_MONTH})\.?,?\s+(\d{{4}})\b",
    re.IGNORECASE,
)
_MONTH_ALONE = re.compile(
    rf"\b(?:in|during|since)\s+(?:(early|mid|late)[\s-]+)?({_MONTH})\b(?!\s*\d)", re.IGNORECASE
)
_SEASONS = {
    "spring": (3, 5),
    "summer": (6, 8),
    "fall": (9, 11),
    "autumn": (9, 11),
    "winter": (12, 2),
}
_SEASON = re.compile(r"\b(spring|summer|fall|autumn|winter)\s+(?:of\s+)?(\d{4})\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(?:in|during|of)\s+((?:19|20)\d{2})\b", re.IGNORECASE)
_RELATIVE = re.compile(r"\b(yesterday|today|last week|this week|last month)\b", re.IGNORECASE)
_FILLER = frozenset(
    terms(
        "happen happened happening occur occurred go going went gone event events thing "
        "things anything something everything new news update updates day days date "
        "tell show list remind remember recall"
    )
)
"""Words of a question that ask about a time without naming a subject ("what
happened", "anything new"): beside a date phrase, they leave nothing to match."""


class Window(msgspec.Struct, frozen=True):
    """A half-open time window [start_ns, end_ns) in ns; 0 / None mean unbounded."""

    start_ns: int = 0
    end_ns: int | None = None

    def intersect(self, other: Window) -> Window:
        ends = [e for e in (self.end_ns, other.end_ns) if e is not None]
        return Window(max(self.start_ns, other.start_ns), min(ends) if ends else None)


def day_start(day: dt.date) -> int:
    """Midnight UTC of ``day`` in ns."""
    return (day - dt.date(1970, 1, 1)).days * DAY_NS


def today(now_ns: int) -> dt.date:
    """The UTC day of ``now_ns``."""
    return dt.date(1970, 1, 1) + dt.timedelta(days=now_ns // DAY_NS)


def parse_day(text: str, what: str = "date") -> dt.date:
    """An ISO day (``2026-11-20``).

    Raises:
        InputError: not a date.
    """
    try:
        return dt.date.fromisoformat(text.strip()[:10])
    except ValueError:
        raise InputError(
            f"cannot read {what} {text!r}", "write dates as YYYY-MM-DD, e.g. 2026-11-20"
        ) from None


def since_window(text: str, now_ns: int) -> Window:
    """``--since``: a span back from now (``30d``, ``2w``, ``12h``) or a day.

    Raises:
        InputError: neither a span nor a date.
    """
    m = _SPAN.match(text)
    if m:
        days = float(m[1]) * _UNIT_DAYS[m[2].lower()]
        return Window(max(0, now_ns - int(days * DAY_NS)))
    try:
        return Window(day_start(dt.date.fromisoformat(text.strip())))
    except ValueError:
        raise InputError(
            f"cannot read `since` {text!r}",
            "give a span like 30d, 2w or 12h, or a date YYYY-MM-DD",
            param="since",
        ) from None


def between_window(start: str, end: str) -> Window:
    """``--between A B``: from the start of day A to the end of day B (inclusive).

    Raises:
        InputError: a bad date, or B before A.
    """
    a, b = parse_day(start, "--between start"), parse_day(end, "--between end")
    if b < a:
        raise InputError(
            f"`between` ends ({b}) before it starts ({a})",
            "give the earlier date first",
            param="between",
        )
    return Window(day_start(a), day_start(b) + DAY_NS)


def _year_near(month: int, day: int, ref: dt.date) -> dt.date | None:
    best = None
    for year in (ref.year - 1, ref.year, ref.year + 1):
        try:
            d = dt.date(year, month, day)
        except ValueError:
            continue
        if best is None or abs((d - ref).days) < abs((best - ref).days):
            best = d
    return best


class DatePhrase(msgspec.Struct, frozen=True):
    """What a question says about time: the question without its date phrase, the
    window the phrase means (None: it names no time), the phrase as read, and the day
    it centres on (midnight UTC in ns) when it names one ("around Nov 5", "Nov 5")."""

    rest: str
    window: Window | None = None
    phrase: str = ""
    day_ns: int | None = None

    @property
    def only_date(self) -> bool:
        """The question asks only about a time: besides its date phrase it holds stop
        words and words like "happened" or "anything" (``_FILLER``)."""
        return self.window is not None and all(t in _FILLER for t in terms(self.rest))

    @property
    def exact_day(self) -> bool:
        """The phrase names one whole day: "on Oct 7", "2026-10-07", "October 7th",
        "yesterday", "the Sunday before Oct 25"."""
        w = self.window
        return w is not None and w.end_ns is not None and w.end_ns - w.start_ns == DAY_NS

    def lexical(self, query: str) -> str:
        """What the words of ``query`` (the question this phrase was read from) are
        matched by: for an exact day, the question without its date phrase (that day is
        boosted by date, and a month's name or a number would match other days' chunks
        that mention them), or nothing when it asks only about that day; else the
        whole question."""
        if not self.exact_day:
            return query
        return "" if self.only_date else self.rest


def date_in_query(query: str, now_ns: int | Callable[[], int], around_days: int) -> DatePhrase:
    """A date phrase of a question as a window, and the question without it.

    Read in this order (the first that matches wins):

    * a shift from a day: "the week before Aug 3, 2023", "two weeks after 1 May",
      "the Sunday before Oct 25", "the weekend before Apr 10";
    * a day: "around Nov 27" is Nov 27 +- ``around_days``; "on 2026-11-27" (or a bare
      day) that day; "since Nov 20" from then on;
    * a month: "in May 2023", "early November 2022" (days 1-10), "mid" (11-20),
      "late" or "the end of" (21 on); "in May" (the May nearest to today);
    * a season of a year: "summer 2021" (June to August);
    * a year: "in 2022";
    * "yesterday", "today", "this week", "last week", "last month".

    A month and day without a year is the one nearest to today.
    """
    ref = _Today(now_ns)
    for read in (_shifted, _day_phrase, _month_phrase, _season_phrase, _year_phrase):
        got = read(query, ref, around_days)
        if got is not None:
            return got
    r = _RELATIVE.search(query)
    if r:
        phrase = r[1].lower()
        day = ref()
        start = {"yesterday": 1, "today": 0, "last week": 7, "this week": day.weekday()}.get(
            phrase, 30
        )
        end = day_start(day) if phrase == "yesterday" else day_start(day) + DAY_NS
        return DatePhrase(_without(query, r), Window(day_start(day) - start * DAY_NS, end), r[0])
    return DatePhrase(query)


def _without(query: str, m: re.Match[str]) -> str:
    return (query[: m.start()] + " " + query[m.end() :]).strip()


class _Today:
    """Today by the clock, read once and only when a phrase needs it (reading a
    clock may move it)."""

    def __init__(self, now: int | Callable[[], int]) -> None:
        self._now = now
        self._day: dt.date | None = None

    def __call__(self) -> dt.date:
        if self._day is None:
            self._day = today(self._now() if callable(self._now) else self._now)
        return self._day


def _day_of(m: re.Match[str], at: int, ref: _Today) -> dt.date | None:
    """The day of a ``_DAY`` match whose groups start at ``at``: ISO, "Nov 27[, 2023]"
    or "27 Nov[ 2023]"."""
    iso, mon1, day1, year1, day2, mon2, year2 = (m[at + i] for i in range(7))
    if iso:
        try:
            return dt.date.fromisoformat(iso)
        except ValueError:
            return None
    month = _MONTHS[(mon1 or mon2).lower()]
    day, year = int(day1 or day2), year1 or year2
    return _on(int(year), month, day) if year else _year_near(month, day, ref())


def _day_phrase(query: str, ref: _Today, around_days: int) -> DatePhrase | None:
    m = _PHRASE.search(query)
    d = _day_of(m, 2, ref) if m else None
    if m is None or d is None:
        return None
    return _dated(_without(query, m), m[0].strip(), (m[1] or "").lower(), day_start(d), around_days)


def _shifted(query: str, ref: _Today, _around: int) -> DatePhrase | None:
    """ "the week before D", "two weeks after D", "the Sunday before D"."""
    m = _SHIFT.search(query)
    d = _day_of(m, 4, ref) if m else None
    if m is None or d is None:
        return None
    count = _COUNTS.get((m[1] or "one").lower()) or int(m[1])
    unit, before = m[2].lower().rstrip("s"), m[3].lower() == "before"
    step = -1 if before else 1
    if unit in _WEEKDAYS:  # the nearest such weekday strictly before / after D
        day = d + dt.timedelta(days=step)
        while day.weekday() != _WEEKDAYS[unit]:
            day += dt.timedelta(days=step)
        start, days = day, 1
    elif m[3].lower() == "of":  # "the week of D": its Monday to Sunday
        span = {"day": 1, "week": 7, "weekend": 7, "month": 31}[unit]
        start, days = d - dt.timedelta(days=d.weekday() if span == 7 else 0), span
    else:
        span = {"day": 1, "week": 7, "weekend": 7, "month": 30}[unit] * count
        start = d - dt.timedelta(days=span) if before else d + dt.timedelta(days=1)
        if count > 1 or unit == "day":  # "two weeks before D": around D - 14 days
            centre = d + dt.timedelta(days=step * span)
            half = {"day": 0, "week": 3, "weekend": 3, "month": 15}[unit]
            start, days = centre - dt.timedelta(days=half), 2 * half + 1
        else:
            days = span
    w = Window(day_start(start), day_start(start) + days * DAY_NS)
    return DatePhrase(_without(query, m), w, m[0].strip(), day_start(start) if days == 1 else None)


def _month_phrase(query: str, ref: _Today, _around: int) -> DatePhrase | None:
    m = _MONTH_YEAR.search(query)
    if m is not None:
        year = int(m[3])
    else:
        m = _MONTH_ALONE.search(query)
        if m is None:
            return None
        month = _MONTHS[m[2].lower()]
        day = ref()
        year = day.year if month <= day.month else day.year - 1  # the last such month
    month = _MONTHS[m[2].lower()]
    first = dt.date(year, month, 1)
    end = dt.date(year + (month == 12), month % 12 + 1, 1)
    part = (m[1] or "").lower().removeprefix("the ").split(" ")[0]
    lo, hi = {"early": (1, 11), "beginning": (1, 11), "start": (1, 11), "mid": (11, 21),
              "middle": (11, 21), "late": (21, 32), "end": (21, 32)}.get(part, (1, 32))  # fmt: skip
    start = first + dt.timedelta(days=lo - 1)
    stop = min(end, first + dt.timedelta(days=hi - 1))
    w = Window(day_start(start), day_start(stop))
    return DatePhrase(_without(query, m), w, m[0].strip())


def _season_phrase(query: str, _ref: _Today, _around: int) -> DatePhrase | None:
    m = _SEASON.search(query)
    if m is None:
        return None
    first, last = _SEASONS[m[1].lower()]
    year = int(m[2])
    start = dt.date(year - (first > last), first, 1)
    stop = dt.date(year + (last == 12), last % 12 + 1, 1)
    return DatePhrase(_without(query, m), Window(day_start(start), day_start(stop)), m[0].strip())


def _year_phrase(query: str, _ref: _Today, _around: int) -> DatePhrase | None:
    m = _YEAR.search(query)
    if m is None:
        return None
    year = int(m[1])
    w = Window(day_start(dt.date(year, 1, 1)), day_start(dt.date(year + 1, 1, 1)))
    return DatePhrase(_without(query, m), w, m[0].strip())


def _dated(rest: str, phrase: str, word: str, day_ns: int, around_days: int) -> DatePhrase:
    """The window of a phrase naming a day: +- ``around_days`` around it, from it on
    ("since", which centres on no day), or that day."""
    if word in ("around", "about", "near"):
        w = Window(day_ns - around_days * DAY_NS, day_ns + (around_days + 1) * DAY_NS)
    elif word == "since":
        return DatePhrase(rest, Window(day_ns), phrase)
    else:
        w = Window(day_ns, day_ns + DAY_NS)
    return DatePhrase(rest, w, phrase, day_ns)


def _on(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None
