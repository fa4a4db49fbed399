"""Rendering query results over the brain's history (``sql``, ``report``) as aligned
text tables and CSV (the JSON objects are ``ocb.wire``'s).

A float that is not finite is ``nan``, ``inf`` or ``-inf`` in text and CSV, as DuckDB
prints them (``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` in JSON). A value out of
Python's range (a timestamp past year 9999) arrives as DuckDB's text and is printed as
it is."""

from __future__ import annotations

import csv
import io
import math
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ocb.wire.answers import cell

if TYPE_CHECKING:
    from replay.report import HistoryReport
    from replay.store_meta import QueryResult


def _text_cell(v: Any) -> str:
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)  # nan, inf, -inf
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_text_cell(x) for x in v) + "]"
    v = cell(v)
    if v is None:
        return "NULL"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def table_text(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    """An aligned text table (numbers right-aligned)."""
    if not columns:
        return "(no result)"
    cells = [[_text_cell(v) for v in row] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    numeric = [
        bool(rows)
        and all(isinstance(row[i], int | float | Decimal) or row[i] is None for row in rows)
        for i in range(len(columns))
    ]

    def line(vals: list[str]) -> str:
        return "  ".join(
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(vals, widths, numeric, strict=True)
        ).rstrip()

    out = [line(columns), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)


def result_text(r: QueryResult) -> str:
    return table_text(r.columns, r.rows)


def result_csv(r: QueryResult) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if r.columns:
        w.writerow(r.columns)
    for row in r.rows:
        w.writerow(["" if v is None else _text_cell(v) for v in row])
    return buf.getvalue()


def report_text(r: HistoryReport) -> str:
    parts = [f"history up to seq {r.seq}"]
    for t in r.tables:
        parts.append(f"\n{t.title}:")
        parts.append(table_text(t.columns, t.rows) if t.rows else "(none)")
    return "\n".join(parts)
