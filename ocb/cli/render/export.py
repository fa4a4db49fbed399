"""Rendering what ``ocb export`` wrote: a line per view, or its JSON object
``{dir, brain_id, brain, last_seq, bytes, views: [{view, rows, files, bytes}]}``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ocb.wire.encode import fields

if TYPE_CHECKING:
    from replay.parquet import ParquetExport


def export_json(e: ParquetExport) -> dict[str, Any]:
    return {**fields(e), "bytes": e.bytes}


def export_text(e: ParquetExport) -> str:
    rows = sum(v.rows for v in e.views)
    lines = [
        f"exported brain {e.brain} ({e.brain_id}) up to seq {e.last_seq} into {e.dir}: "
        f"{rows:,} rows, {e.bytes / 2**20:.1f} MiB"
    ]
    width = max(len(v.view) for v in e.views)
    for v in e.views:
        lines.append(f"  {v.view:<{width}}  {v.rows:>9,} rows  {v.files:>5,} files")
    return "\n".join(lines)
