"""Rendering ``ocb compact`` and ``ocb show`` as text (the JSON is ``ocb.wire.compact``'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocb.graph.file_text import FileAt
    from ocb.memory.compact import CompactReport


def compact_text(r: CompactReport) -> str:
    n = len(r.notes)
    if not n and not r.written:
        said = [f"  skipped {path}: {why}" for path, why in r.skipped]
        head = f"nothing to compact: no daily note of days before {r.cutoff} is left as it was"
        return "\n".join([f"{head}; nothing written or recorded", *said])
    lines = [r.diff.rstrip("\n")] if r.diff and not r.written else []
    verb = "compacted" if r.written else "would compact (dry run, nothing written)"
    head = f"{verb} {n} daily note{'s' if n != 1 else ''} of days before {r.cutoff}"
    if n:
        head += (
            f": {len(r.moves)} moves into {len(r.files) - n} bank page(s), "
            f"{r.chars_before:,} -> {r.chars_after:,} characters in {len(r.files)} file(s)"
        )
    lines.append(head)
    if r.written:
        lines.append(
            f"  {r.carried} chunk(s) kept their ids, {r.routes_retied} route credit(s) "
            f"follow them; old texts: ocb show PATH --as-of {r.as_of}"
        )
    lines += [f"  skipped {path}: {why}" for path, why in r.skipped]
    return "\n".join(lines)


def file_text(f: FileAt) -> str:
    return f.text.removesuffix("\n")
