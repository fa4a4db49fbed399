"""Reading the dates and windows a user gives recall: ``30d``, ``2026-11-20``,
``--between A B`` and phrases inside a question ("around Nov 27", "yesterday", "last
week"), always against the brain's clock (UTC days)."""

from __future__ import annotations

import datetime as dt
import re

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
_PHRASE = re.compile(
    rf"\b(?:(around|about|near|on|in|since)\s+)?"
    rf"(?:(\d{{4}}-\d{{2}}-\d{{2}})|({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?"
    rf"|(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?(?:,?\s+(\d{{4}}))?)\b",
    re.IGNORECASE,
)
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

    @property
    def bounded(self) -> bool:
        return self.start_ns > 0 or self.end_ns is not None


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
            f"cannot read --since {text!r}", "give a span like 30d, 2w or 12h, or a date YYYY-MM-DD"
        ) from None


def between_window(start: str, end: str) -> Window:
    """``--between A B``: from the start of day A to the end of day B (inclusive).

    Raises:
        InputError: a bad date, or B before A.
    """
    a, b = parse_day(start, "--between start"), parse_day(end, "--between end")
    if b < a:
        raise InputError(
            f"--between ends ({b}) before it starts ({a})", "give the earlier date first"
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


def date_in_query(query: str, now_ns: int, around_days: int) -> DatePhrase:
    """A date phrase of a question as a window, and the question without it.

    "around Nov 27" is Nov 27 +- ``around_days``; "on 2026-11-27" (or a bare date) that
    day; "since Nov 20" from then on; a month and day without a year is the one nearest
    to today.
    """
    ref = today(now_ns)
    m = _PHRASE.search(query)
    if m:
        word = (m[1] or "").lower()
        if m[2]:
            try:
                d: dt.date | None = dt.date.fromisoformat(m[2])
            except ValueError:
                d = None
        else:
            month = _MONTHS[(m[3] or m[7]).lower()]
            day, year = int(m[4] or m[6]), m[5] or m[8]
            d = _on(int(year), month, day) if year else _year_near(month, day, ref)
        if d is not None:
            rest = (query[: m.start()] + " " + query[m.end() :]).strip()
            return _dated(rest, m[0].strip(), word, day_start(d), around_days)
    r = _RELATIVE.search(query)
    if r:
        phrase = r[1].lower()
        start = {"yesterday": 1, "today": 0, "last week": 7, "this week": ref.weekday()}.get(
            phrase, 30
        )
        end = day_start(ref) if phrase == "yesterday" else day_start(ref) + DAY_NS
        rest = (query[: r.start()] + " " + query[r.end() :]).strip()
        return DatePhrase(rest, Window(day_start(ref) - start * DAY_NS, end), r[0])
    return DatePhrase(query)


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
