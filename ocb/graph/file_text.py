"""A workspace file as the brain recorded it (``ocb show PATH --as-of SEQ``): its text
put back together from the chunks the log holds for it at that seq.

Chunks hold the lines of a file at their line numbers (headings included); the lines
no chunk holds were blank (those after the last chunk too: as many as give the recorded
hash, up to 63). The text is checked against the content hash the log recorded for the
file: ``exact`` says it matched, byte for byte. It may not when the file had a long line
cut into slices at runs of whitespace, text that a merge or a secret redaction replaced,
or bytes that are not UTF-8; the lines are still those the brain indexed.
"""

from __future__ import annotations

import hashlib
from pathlib import PurePosixPath

import msgspec

from ocb_events.errors import InputError, unknown
from projections.graph import State

__all__ = ["FileAt", "file_at"]

_TRAILING = 64


class FileAt(msgspec.Struct):
    """A file at ``seq``: its path, the content hash recorded for it, its text, whether
    the text matches that hash, and how many chunks it was put together from."""

    path: str
    seq: int
    content_hash: str
    text: str
    exact: bool
    chunks: int


def _relative(path: str) -> str:
    """``path`` as a workspace-relative posix path.

    Raises:
        InputError: an absolute path, or one that climbs out with ``..``.
    """
    p = PurePosixPath(path.replace("\\", "/"))
    if p.is_absolute() or ".." in p.parts:
        raise InputError(
            f"{path!r} is outside the workspace",
            "give the file's path inside the workspace, e.g. memory/2026-11-03.md",
            param="path",
        )
    return str(p).removeprefix("./")


def _hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def file_at(graph: State, path: str, seq: int) -> FileAt:
    """The file at workspace-relative ``path`` in ``graph`` (folded up to ``seq``).

    Raises:
        InputError: a path outside the workspace, or one the brain held no file at then
            (close paths named).
    """
    rel = _relative(path)
    entry = graph.files.get(rel)
    if entry is None:
        raise unknown(
            "file",
            rel,
            sorted(graph.files),
            "give a path the brain had indexed by then",
            f" at seq {seq}",
        )
    lines: dict[int, str] = {}
    nodes = [graph.nodes[i] for i in entry.chunks if i in graph.nodes]
    for n in nodes:
        if n.start_line == n.end_line and n.start_col:  # a slice of a long line
            lines[n.start_line] = f"{lines.get(n.start_line, '')} {n.text}".lstrip()
            continue
        for k, line in enumerate(n.text.split("\n")):
            lines[n.start_line + k] = line
    last = max(lines, default=0)
    body = "\n".join(lines.get(i, "") for i in range(1, last + 1))
    # the blank lines after the last chunk are not in any: try a few
    candidates = [body + "\n" * k for k in (1, 0, *range(2, _TRAILING))]
    text = next((t for t in candidates if _hash(t) == entry.content_hash), candidates[0])
    return FileAt(rel, seq, entry.content_hash, text, _hash(text) == entry.content_hash, len(nodes))
