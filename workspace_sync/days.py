"""The day a chunk is about: a daily file's name (``memory/2026-11-20.md``), else a
date in its heading (``2026-11-20 > Standup``), else a date opening its first line
(``- 2026-11-20 09:14 deploy``). Days count from 1970-01-01; -1 is none."""

from __future__ import annotations

import datetime as dt
import re

NO_DAY = -1
_ISO = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_LEADING = re.compile(r"^\W{0,4}(\d{4}-\d{2}-\d{2})(?!\d)")
_EPOCH = dt.date(1970, 1, 1)


def _day(text: str) -> int:
    try:
        return (dt.date.fromisoformat(text) - _EPOCH).days
    except ValueError:
        return NO_DAY


def chunk_day(path: str, heading: str = "", text: str = "") -> int:
    """The day of a chunk (see the module's doc), or ``NO_DAY``.

    Example:
        >>> chunk_day("memory/1970-01-02.md")
        1
    """
    name = path.rsplit("/", 1)[-1]
    for source in (name, heading):
        m = _ISO.search(source)
        if m and (day := _day(m[0])) != NO_DAY:
            return day
    m = _LEADING.match(text)
    return _day(m[1]) if m else NO_DAY
