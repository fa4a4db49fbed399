"""Rendering the current facts (``ocb.memory.kg``) as text (the JSON objects, and their
shapes, are ``ocb.wire``'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocb.memory.kg import KgHistory, KgSetReport, KgView


def _days(days: float) -> str:
    """``1 day``, ``2.5 days``: as the staleness caveat of ``ocb.memory.kg`` says it."""
    return f"{days:g} day" + ("" if days == 1 else "s")


def set_text(r: KgSetReport) -> str:
    if r.previous is None:
        what = "new fact"
    elif r.changed:
        what = f"was {r.previous}"
    else:
        what = "unchanged; re-verified"
    cite = f" from {r.source}" if r.source else ""
    return f"{r.subject} {r.predicate} = {r.value}{cite} ({what}) at seq {r.seq}"


def get_text(v: KgView) -> str:
    lines = [f"{v.subject} (at seq {v.seq}, {v.now})"]
    for f in v.facts:
        cite = f" [{f.source}]" if f.source else ""
        lines.append(f"  {f.predicate} = {f.value}{cite}")
        since = f"since {f.since}, " if f.since != f.verified else ""
        lines.append(f"    {since}verified {f.verified} ({_days(f.age_days)} ago)")
        if f.caveat:
            lines.append(f"    caveat: {f.caveat}")
        for c in f.conflicts:
            by = f" from {c.source}" if c.source else " (no source)"
            lines.append(f"    conflict: {c.value}{by} at {c.time} (seq {c.seq})")
    return "\n".join(lines)


def history_text(h: KgHistory) -> str:
    lines = [f"{h.subject} (up to seq {h.seq})"]
    for p in h.predicates:
        lines.append(f"  {p.predicate}:")
        for s in p.statements:
            cite = f" [{s.source}]" if s.source else ""
            lines.append(f"    seq {s.seq} {s.time}  {s.value}{cite}")
    return "\n".join(lines)
