"""Rendering query results over the brain's history (``sql``, ``report``) as aligned
text tables, CSV and the stable JSON objects (documented in README.md).

JSON has no NaN or infinity: a float that is not finite is the string ``"NaN"``,
``"Infinity"`` or ``"-Infinity"`` there (what JavaScript's ``Number()`` and Python's
``float()`` read back), and ``nan``, ``inf`` or ``-inf`` in text and CSV, as DuckDB
prints them. A value out of Python's range (a timestamp past year 9999) arrives as
DuckDB's text and is printed as it is."""

from __future__ import annotations

import csv
import io
import math
from datetime import date, datetime, time
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from replay.report import HistoryReport
    from replay.store_meta import QueryResult


_NOT_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def cell(v: Any) -> Any:
    """A value as JSON: times as ISO strings (a naive datetime is UTC and gets ``Z``),
    decimals as floats, a float that is not finite as ``"NaN"``, ``"Infinity"`` or
    ``"-Infinity"``, anything else JSON has no type for as its text."""
    if isinstance(v, datetime):
        return v.isoformat() + ("Z" if v.tzinfo is None else "")
    if isinstance(v, date | time):
        return v.isoformat()
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, float) and not math.isfinite(v):
        return _NOT_FINITE[str(v)]
    if isinstance(v, list | tuple):
        return [cell(x) for x in v]
    if isinstance(v, dict):
        return {str(k): cell(x) for k, x in v.items()}
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v).hex()
    if v is None or isinstance(v, str | int | float):
        return v
    return str(v)  # INTERVAL, UUID ...


def rows_json(columns: list[str], rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """One object per row, by column name."""
    return [dict(zip(columns, (cell(v) for v in row), strict=True)) for row in rows]


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


def result_json(r: QueryResult) -> list[dict[str, Any]]:
    return rows_json(r.columns, r.rows)


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


def report_json(r: HistoryReport) -> dict[str, Any]:
    """``{seq, tables: {name: [row objects]}}``."""
    return {"seq": r.seq, "tables": {t.name: rows_json(t.columns, t.rows) for t in r.tables}}


def report_text(r: HistoryReport) -> str:
    parts = [f"history up to seq {r.seq}"]
    for t in r.tables:
        parts.append(f"\n{t.title}:")
        parts.append(table_text(t.columns, t.rows) if t.rows else "(none)")
    return "\n".join(parts)
