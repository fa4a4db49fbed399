"""Points in a brain's history: a seq, or a time resolved to the last record at or
before it (record timestamps never decrease, so a binary search over seqs finds it)."""

from __future__ import annotations

from datetime import UTC, datetime

from ocb_events.errors import InputError
from ocb_events.protocol import EventLog


def iso(ts_ns: int) -> str:
    """A record timestamp as ISO 8601 UTC, to the second."""
    return datetime.fromtimestamp(ts_ns / 1e9, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _valid_range(log: EventLog) -> str:
    last = log.last_seq
    first = -(-log.ts_of(1) // 1_000_000_000) * 1_000_000_000  # the first whole second in
    return f"seq 1 to {last}, or a time from {iso(first)} to {iso(log.ts_of(last))}"


def parse_time(spec: str, param: str = "as_of") -> int:
    """An ISO 8601 time as ns since the epoch (a time without zone is UTC); ``param``
    names the parameter it was given as.

    Raises:
        InputError: not an ISO 8601 date or time.
    """
    try:
        when = datetime.fromisoformat(spec.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(
            f"`{param}` {spec!r} is neither a seq nor an ISO time",
            "give a seq (1200) or a time (2026-11-03T10:00, UTC unless it has a zone)",
            param=param,
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1_000_000) * 1000


def seq_at_time(log: EventLog, ts_ns: int) -> int:
    """The last seq whose record's ts is at or before ``ts_ns`` (0 when none is)."""
    lo, hi = 0, log.last_seq
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if log.ts_of(mid) <= ts_ns:
            lo = mid
        else:
            hi = mid - 1
    return lo


def resolve_point(log: EventLog, spec: str | int, param: str = "as_of") -> int:
    """The seq a point in the history names (``as_of``, or the parameter ``param``): a
    seq, or an ISO time.

    Raises:
        InputError: an empty log, a malformed time, or a point outside the history
            (the message gives the valid range).
    """
    if log.last_seq == 0:
        raise InputError("the brain has no history yet", "record something first (ocb init)")
    text = str(spec).strip()
    if text.isdigit():
        seq = int(text)
        if not 1 <= seq <= log.last_seq:
            raise InputError(
                f"`{param}` {seq} is outside the history",
                "valid: " + _valid_range(log),
                param=param,
            )
        return seq
    ts = parse_time(text, param)
    seq = seq_at_time(log, ts)
    if seq == 0 or ts > log.ts_of(log.last_seq):
        raise InputError(
            f"`{param}` {text} is outside the history", "valid: " + _valid_range(log), param=param
        )
    return seq
