"""Pure file diffing: the previous chunks of a file plus its new text -> one event.

Chunk ids are ``path::n`` with ``n`` never reused within a file's life. An edited file
keeps the ids (and so the learned edges) of chunks whose text did not change, even
when they moved; new text gets new ids; chunks that disappeared are removed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from ocb_events.schema import ChunkSpan, ChunkText, Event, FileChanged, FileIndexed, FileRemoved
from workspace_sync.markdown import MAX_CHARS, TARGET_CHARS, Piece, chunk_text
from workspace_sync.scan import FileText


def text_hash(text: str) -> str:
    """The content hash of a chunk's text."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


class PreviousFile:
    """What the brain holds of a file: its content hash, chunk ids in order with
    their text hashes, and the next free ordinal."""

    __slots__ = ("content_hash", "chunks", "next_ordinal")

    def __init__(
        self, content_hash: str, chunks: Sequence[tuple[str, str]], next_ordinal: int
    ) -> None:
        self.content_hash = content_hash
        self.chunks = tuple(chunks)
        self.next_ordinal = next_ordinal


def _chunk(node_id: str, p: Piece) -> ChunkText:
    return ChunkText(
        id=node_id,
        text=p.text,
        text_hash=text_hash(p.text),
        start_line=p.start_line,
        end_line=p.end_line,
        heading=p.heading,
        start_col=p.start_col,
    )


def diff_file(
    f: FileText,
    previous: PreviousFile | None,
    *,
    target_chars: int = TARGET_CHARS,
    max_chars: int = MAX_CHARS,
) -> Event | None:
    """The event that brings the brain's view of ``f`` up to date (None: unchanged)."""
    if previous is not None and previous.content_hash == f.content_hash:
        return None
    pieces = chunk_text(f.text, markdown=f.markdown, target_chars=target_chars, max_chars=max_chars)
    if previous is None:
        chunks = tuple(_chunk(f"{f.path}::{i}", p) for i, p in enumerate(pieces))
        return FileIndexed(path=f.path, content_hash=f.content_hash, chunks=chunks)
    unused: dict[str, list[str]] = {}
    for node_id, h in previous.chunks:
        unused.setdefault(h, []).append(node_id)
    kept: list[ChunkSpan] = []
    added: list[ChunkText] = []
    ordinal = previous.next_ordinal
    for p in pieces:
        h = text_hash(p.text)
        ids = unused.get(h)
        if ids:
            kept.append(
                ChunkSpan(
                    id=ids.pop(0),
                    text_hash=h,
                    start_line=p.start_line,
                    end_line=p.end_line,
                    start_col=p.start_col,
                )
            )
        else:
            added.append(_chunk(f"{f.path}::{ordinal}", p))
            ordinal += 1
    removed = tuple(i for ids in unused.values() for i in ids)
    return FileChanged(
        path=f.path,
        content_hash=f.content_hash,
        added=tuple(added),
        kept=tuple(kept),
        removed=tuple(sorted(removed)),
    )


def diff_workspace(
    files: Sequence[FileText],
    previous: Mapping[str, PreviousFile],
    *,
    keep: frozenset[str] = frozenset(),
    target_chars: int = TARGET_CHARS,
    max_chars: int = MAX_CHARS,
) -> list[Event]:
    """Events for every file added, changed or gone. Paths in ``keep`` (present but
    unreadable now) are left as they are."""
    events: list[Event] = []
    seen = set()
    for f in files:
        seen.add(f.path)
        ev = diff_file(f, previous.get(f.path), target_chars=target_chars, max_chars=max_chars)
        if ev is not None:
            events.append(ev)
    for path in sorted(previous):
        if path not in seen and path not in keep:
            ids = tuple(i for i, _ in previous[path].chunks)
            events.append(FileRemoved(path=path, removed=ids))
    return events
