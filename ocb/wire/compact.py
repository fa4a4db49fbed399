"""The JSON of ``ocb compact`` and ``ocb show``."""

from __future__ import annotations

from typing import Any

from ocb.graph.file_text import FileAt
from ocb.memory.compact import CompactReport

__all__ = ["compact_json", "file_json"]


def compact_json(r: CompactReport) -> dict[str, Any]:
    """``{older_than, cutoff, as_of, notes, files, chars_before, chars_after, moves,
    carried, routes_retied, skipped, written, diff}``: the notes of days before
    ``cutoff`` compacted, each move as ``{source, target}`` (``path#Ln-Lm``), the chunks
    that kept their ids, the route credits re-tied, the notes skipped as ``{path,
    reason}``, and the unified diff of every file changed (or, on a dry run, that would
    change)."""
    return {
        "older_than": r.older_than,
        "cutoff": r.cutoff,
        "as_of": r.as_of,
        "notes": r.notes,
        "files": r.files,
        "chars_before": r.chars_before,
        "chars_after": r.chars_after,
        "moves": [{"source": m.source, "target": m.target} for m in r.moves],
        "carried": r.carried,
        "routes_retied": r.routes_retied,
        "skipped": [{"path": p, "reason": why} for p, why in r.skipped],
        "written": r.written,
        "diff": r.diff,
    }


def file_json(f: FileAt) -> dict[str, Any]:
    """``{path, seq, content_hash, exact, chunks, text}``: a file as the brain recorded
    it at ``seq``; ``exact`` says the text matches the recorded content hash."""
    return {
        "path": f.path,
        "seq": f.seq,
        "content_hash": f.content_hash,
        "exact": f.exact,
        "chunks": f.chunks,
        "text": f.text,
    }
