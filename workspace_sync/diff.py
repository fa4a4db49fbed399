"""Pure file diffing: the previous chunks of a file plus its new text -> one event.

Chunk ids are ``path::n`` with ``n`` never reused within a file's life. An edited file
keeps the ids (and so the learned edges) of chunks whose text did not change, even
when they moved. A chunk whose text changed a little keeps its id too, as a revision
(``FileChanged.revised``): after the unchanged chunks are matched, each new chunk left
(in file order) takes the unmatched old chunk of the same heading whose words are most
alike, when their word sets' Jaccard similarity is at least ``SAME`` (0.5; ties go to
the earlier old chunk). Any other new text gets a new id; old chunks left unmatched are
removed. An edit never touches the id of a chunk whose text it did not change.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from ocb_events.schema import ChunkSpan, ChunkText, Event, FileChanged, FileIndexed, FileRemoved
from workspace_sync.markdown import MAX_CHARS, TARGET_CHARS, Piece, chunk_text
from workspace_sync.scan import FileText
from workspace_sync.text import words

SAME = 0.5
"""The word-set Jaccard similarity from which an edited chunk keeps its id."""


def text_hash(text: str) -> str:
    """The content hash of a chunk's text."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


class PreviousFile:
    """What the brain holds of a file: its content hash, chunk ids in order with
    their text hashes, and the next free ordinal."""

    __slots__ = ("chunks", "content_hash", "next_ordinal", "texts")

    def __init__(
        self,
        content_hash: str,
        chunks: Sequence[tuple[str, str]],
        next_ordinal: int,
        texts: Mapping[str, tuple[str, str]] | None = None,
    ) -> None:
        self.content_hash = content_hash
        self.chunks = tuple(chunks)
        self.next_ordinal = next_ordinal
        self.texts = dict(texts or {})
        """(heading, text) of each chunk id, for revisions (none: no revisions)."""


def _alike(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _revisions(
    previous: PreviousFile, unused: list[str], pieces: Sequence[tuple[int, Piece]]
) -> dict[int, str]:
    """Which unmatched old chunk id each new piece (by index) revises."""
    free = list(unused)  # in the old file's order
    old_words = {i: frozenset(words(previous.texts[i][1])) for i in free if i in previous.texts}
    out: dict[int, str] = {}
    for k, p in pieces:
        new = frozenset(words(p.text))
        best, score = "", SAME
        for i in free:
            got = previous.texts.get(i)
            if got is None or got[0] != p.heading:
                continue
            sim = _alike(old_words[i], new)
            if sim >= score and (not best or sim > score):
                best, score = i, sim
        if best:
            out[k] = best
            free.remove(best)
    return out


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
    rest: list[tuple[int, Piece]] = []
    for k, p in enumerate(pieces):
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
            rest.append((k, p))
    left = {i for ids in unused.values() for i in ids}
    revised_of = _revisions(previous, [i for i, _ in previous.chunks if i in left], rest)
    revised = tuple(_chunk(revised_of[k], p) for k, p in rest if k in revised_of)
    added: list[ChunkText] = []
    ordinal = previous.next_ordinal
    for k, p in rest:
        if k not in revised_of:
            added.append(_chunk(f"{f.path}::{ordinal}", p))
            ordinal += 1
    removed = tuple(sorted(left - set(revised_of.values())))
    return FileChanged(
        path=f.path,
        content_hash=f.content_hash,
        added=tuple(added),
        kept=tuple(kept),
        removed=removed,
        revised=revised,
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
