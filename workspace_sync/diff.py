"""Pure file diffing: the previous chunks of a file plus its new text -> one event.

Chunk ids are ``path::n`` with ``n`` never reused within a file's life (nor an id any
node still holds, see ``taken``); after that an id is opaque: a moved file's chunks
keep theirs. Each new piece of an edited file is matched to a previous chunk of the
same file, in two passes:

1. **Same text.** A piece whose text hash is that of an unused previous chunk keeps
   that chunk's id (the first such chunk in file order), even when it moved. When its
   heading (breadcrumb) changed too, the chunk is a revision (below), so the node's
   heading and vector follow; otherwise it is *kept* (a ``ChunkSpan`` at its new place).
2. **Revision rule.** A piece still unmatched keeps the id of an unused previous chunk
   with the same heading whose text is similar: a token Jaccard of at least
   ``REVISION_MIN`` (0.5) over the sets of lowercase word tokens (``tokens``). Pairs
   are taken greedily, best first: the highest Jaccard, ties broken by the previous
   chunk's file order, then the piece's. A matched pair is *revised*: it keeps the old
   id (and so its edges, weights, authority) with the new text, text hash, heading and
   lines. A previous chunk without text (an alias left by a merge) is matched by its
   hash only.

Everything else is *added* under a fresh id, and previous chunks left unused are
*removed*. So a typo fix or an added sentence keeps a chunk's id, an unrelated rewrite
or an edit under a renamed heading gets a new one, and an edit never changes the id of
another chunk whose text stayed the same.

``diff_workspace`` also detects moves, among the previously known paths that are gone
and the new paths (a path the brain already holds is a change of that file, never the
end of a move):

1. **Same content.** A gone path and a new path with the same content hash are one
   file moved (``FileMoved``, every id kept), paired in sorted order of both paths when
   several match.
2. **Moved and edited.** A gone file and a new file are one file moved and edited when
   at least ``MOVE_MIN`` (half) of their chunks keep an id by the two passes above
   (``move_score``: the chunks matched over the larger of the two chunk counts). It is
   recorded as the move (``FileMoved`` with the old content hash) followed by the edit
   (``FileChanged`` at the new path): unchanged chunks keep their ids, edited ones are
   revised, new ones get new ids. When several pairs compete (a copy plus a delete, two
   renames at once, a file split in two), the pairs are taken greedily: the highest
   share first, then the old path, then the new path in sorted order; each path is in
   one pair at most. So the larger part of a split file keeps its ids, and of two equal
   copies the first by path does.

Detection works on whatever subset of files and previous files it is given (a watcher
passes only the paths that changed, so a rename and an edit within one batch are seen
as one).
"""

from __future__ import annotations

import hashlib
from collections.abc import Container, Mapping, Sequence

import msgspec
import numpy as np

from ocb_events.schema import (
    ChunkSpan,
    ChunkText,
    Event,
    FileChanged,
    FileIndexed,
    FileMoved,
    FileRemoved,
)
from workspace_sync.markdown import MAX_CHARS, TARGET_CHARS, Piece, chunk_text
from workspace_sync.scan import FileText
from workspace_sync.text import words

REVISION_MIN = 0.5
"""The token Jaccard from which an edited chunk keeps its id (see the module docstring)."""

MOVE_MIN = 0.5
"""The share of a file's chunks keeping their ids from which a gone file and a new one
are one file moved and edited (see the module docstring)."""


def text_hash(text: str) -> str:
    """The content hash of a chunk's text."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def tokens(text: str) -> frozenset[str]:
    """The set of lowercase word tokens of ``text`` (what the revision rule compares)."""
    return frozenset(words(text))


class PreviousChunk(msgspec.Struct, frozen=True):
    """A chunk the brain holds: its id, text hash, text and heading breadcrumb. With no
    text (an alias left by a merge, or a caller that does not know it) it is matched by
    its text hash only."""

    id: str
    text_hash: str
    text: str = ""
    heading: str = ""


class PreviousFile:
    """What the brain holds of a file: its content hash, its chunks in file order, and
    the next free ordinal. A chunk may be given as an ``(id, text_hash)`` pair."""

    __slots__ = ("content_hash", "chunks", "next_ordinal")

    def __init__(
        self,
        content_hash: str,
        chunks: Sequence[PreviousChunk | tuple[str, str]],
        next_ordinal: int,
    ) -> None:
        self.content_hash = content_hash
        self.chunks = tuple(
            c if isinstance(c, PreviousChunk) else PreviousChunk(*c) for c in chunks
        )
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


def _span(node_id: str, p: Piece, h: str) -> ChunkSpan:
    return ChunkSpan(
        id=node_id, text_hash=h, start_line=p.start_line, end_line=p.end_line, start_col=p.start_col
    )


def match_pieces(pieces: Sequence[Piece], previous: Sequence[PreviousChunk]) -> list[int | None]:
    """For each piece, the index of the previous chunk whose id it keeps (None: a new
    chunk), by the two passes of the module docstring."""
    matched: list[int | None] = [None] * len(pieces)
    unused: dict[str, list[int]] = {}
    for j, c in enumerate(previous):
        unused.setdefault(c.text_hash, []).append(j)
    for i, p in enumerate(pieces):
        js = unused.get(text_hash(p.text))
        if js:
            matched[i] = js.pop(0)
    free = sorted(j for js in unused.values() for j in js if previous[j].text)
    left = [i for i, m in enumerate(matched) if m is None]
    by_heading: dict[str, tuple[list[Keyed], list[Keyed]]] = {}
    for i in left:
        by_heading.setdefault(pieces[i].heading, ([], []))[0].append((i, tokens(pieces[i].text)))
    for j in free:
        if previous[j].heading in by_heading:
            by_heading[previous[j].heading][1].append((j, tokens(previous[j].text)))
    pairs = [p for h in sorted(by_heading) for p in _similar_pairs(*by_heading[h])]
    taken: set[int] = set()
    for _, j, i in sorted(pairs):
        if matched[i] is None and j not in taken:
            matched[i] = j
            taken.add(j)
    return matched


Keyed = tuple[int, frozenset[str]]
"""An index and a token set."""

_BLOCK = 256


def _similar_pairs(
    new: Sequence[Keyed], old: Sequence[Keyed], block_size: int = _BLOCK
) -> list[tuple[float, int, int]]:
    """``(-jaccard, old index, new index)`` of every pair whose token Jaccard reaches
    REVISION_MIN. The overlaps are counted token by token over blocks of new sets, so
    a long file edited everywhere (a word replaced in every paragraph) costs numpy
    work in proportion to the tokens shared, not a Python loop over every pair."""
    if not new or not old:
        return []
    postings: dict[str, list[int]] = {}
    for c, (_, toks) in enumerate(old):
        for t in toks:
            postings.setdefault(t, []).append(c)
    old_sizes = np.array([len(toks) for _, toks in old], dtype=np.int64)
    out: list[tuple[float, int, int]] = []
    for start in range(0, len(new), block_size):
        block = new[start : start + block_size]
        shared: dict[str, list[int]] = {}
        for r, (_, toks) in enumerate(block):
            for t in toks:
                if t in postings:
                    shared.setdefault(t, []).append(r)
        counts = np.zeros((len(block), len(old)), dtype=np.int64)
        for t, rows in shared.items():  # in set order: sums do not depend on it
            counts[np.ix_(rows, postings[t])] += 1
        sizes = np.array([len(toks) for _, toks in block], dtype=np.int64)
        union = sizes[:, None] + old_sizes[None, :] - counts
        score = np.divide(counts, union, out=np.zeros(counts.shape), where=union > 0)
        for r, c in zip(*np.nonzero(score >= REVISION_MIN), strict=True):
            out.append((-float(score[r, c]), old[c][0], block[r][0]))
    return out


def _fresh(path: str, ordinal: int, taken: Container[str]) -> tuple[str, int]:
    """The first id ``path::n`` from ``ordinal`` on that no node holds, and the next n."""
    while f"{path}::{ordinal}" in taken:
        ordinal += 1
    return f"{path}::{ordinal}", ordinal + 1


def diff_file(
    f: FileText,
    previous: PreviousFile | None,
    *,
    target_chars: int = TARGET_CHARS,
    max_chars: int = MAX_CHARS,
    taken: Container[str] = frozenset(),
) -> Event | None:
    """The event that brings the brain's view of ``f`` up to date (None: unchanged).
    New ids skip the ids in ``taken`` (the brain's nodes: a moved file's chunks keep
    ids of their old path)."""
    if previous is not None and previous.content_hash == f.content_hash:
        return None
    pieces = chunk_text(f.text, markdown=f.markdown, target_chars=target_chars, max_chars=max_chars)
    ordinal = previous.next_ordinal if previous is not None else 0
    if previous is None:
        chunks = []
        for p in pieces:
            node_id, ordinal = _fresh(f.path, ordinal, taken)
            chunks.append(_chunk(node_id, p))
        return FileIndexed(path=f.path, content_hash=f.content_hash, chunks=tuple(chunks))
    kept: list[ChunkSpan] = []
    revised: list[ChunkText] = []
    added: list[ChunkText] = []
    used: set[int] = set()
    for p, j in zip(pieces, match_pieces(pieces, previous.chunks), strict=True):
        if j is None:
            node_id, ordinal = _fresh(f.path, ordinal, taken)
            added.append(_chunk(node_id, p))
            continue
        old, h = previous.chunks[j], text_hash(p.text)
        used.add(j)
        if old.text_hash == h and (old.heading == p.heading or not old.text):
            kept.append(_span(old.id, p, h))
        else:
            revised.append(_chunk(old.id, p))
    removed = tuple(sorted(c.id for j, c in enumerate(previous.chunks) if j not in used))
    return FileChanged(
        path=f.path,
        content_hash=f.content_hash,
        added=tuple(added),
        kept=tuple(kept),
        removed=removed,
        revised=tuple(revised),
    )


def move_score(pieces: Sequence[Piece], previous: PreviousFile) -> float:
    """The share of chunks that keep an id when ``pieces`` replace ``previous``: the
    pieces ``match_pieces`` matches, over the larger of the two counts (0 for two
    empty files)."""
    n = max(len(pieces), len(previous.chunks))
    if not n:
        return 0.0
    return sum(m is not None for m in match_pieces(pieces, previous.chunks)) / n


def _candidates(
    pieces: Mapping[str, Sequence[Piece]], previous: Mapping[str, PreviousFile], gone: Sequence[str]
) -> list[tuple[str, str]]:
    """The (old path, new path) pairs of which some piece can keep a chunk's id (the
    same text hash, or the same heading and a token Jaccard reaching REVISION_MIN), in
    sorted order: no other pair has a ``move_score`` above 0."""
    by_hash: dict[str, set[str]] = {}
    olds: dict[str, list[Keyed]] = {}
    owners: list[str] = []
    for old in gone:
        for c in previous[old].chunks:
            by_hash.setdefault(c.text_hash, set()).add(old)
            if c.text:
                olds.setdefault(c.heading, []).append((len(owners), tokens(c.text)))
                owners.append(old)
    news: dict[str, list[Keyed]] = {}
    holders: list[str] = []
    out: set[tuple[str, str]] = set()
    for new in sorted(pieces):
        for p in pieces[new]:
            out.update((old, new) for old in by_hash.get(text_hash(p.text), ()))
            news.setdefault(p.heading, []).append((len(holders), tokens(p.text)))
            holders.append(new)
    for h in sorted(news.keys() & olds.keys()):
        out.update((owners[j], holders[i]) for _, j, i in _similar_pairs(news[h], olds[h]))
    return sorted(out)


def _edited_moves(
    files: Sequence[FileText],
    previous: Mapping[str, PreviousFile],
    gone: Sequence[str],
    *,
    target_chars: int,
    max_chars: int,
) -> dict[str, str]:
    """New path -> old path for each gone file that a new file holds moved and edited
    (``move_score`` reaching MOVE_MIN), taken greedily: the highest share first, then
    the old path, then the new path in sorted order."""
    pieces = {
        f.path: chunk_text(
            f.text, markdown=f.markdown, target_chars=target_chars, max_chars=max_chars
        )
        for f in files
    }
    scored = []
    for old, new in _candidates(pieces, previous, gone):
        score = move_score(pieces[new], previous[old])
        if score >= MOVE_MIN:
            scored.append((-score, old, new))
    moves: dict[str, str] = {}
    for _, old, new in sorted(scored):
        if new not in moves and old not in moves.values():
            moves[new] = old
    return moves


def _moves(
    files: Sequence[FileText],
    previous: Mapping[str, PreviousFile],
    gone: Sequence[str],
    *,
    target_chars: int = TARGET_CHARS,
    max_chars: int = MAX_CHARS,
) -> dict[str, str]:
    """New path -> old path for each gone file that a new path holds: first the same
    content (gone paths in sorted order, each paired with the first unpaired new path,
    sorted), then moved and edited (``_edited_moves``) among the rest."""
    new_files = sorted((f for f in files if f.path not in previous), key=lambda f: f.path)
    by_hash: dict[str, list[str]] = {}
    for f in new_files:
        by_hash.setdefault(f.content_hash, []).append(f.path)
    moves: dict[str, str] = {}
    for old in gone:
        paths = by_hash.get(previous[old].content_hash)
        if paths:
            moves[paths.pop(0)] = old
    rest = [old for old in gone if old not in moves.values()]
    left = [f for f in new_files if f.path not in moves]
    if rest and left:
        moves |= _edited_moves(left, previous, rest, target_chars=target_chars, max_chars=max_chars)
    return moves


class _Either:
    """Ids in either of two containers."""

    def __init__(self, a: Container[str], b: Container[str]) -> None:
        self.a, self.b = a, b

    def __contains__(self, x: object) -> bool:
        return x in self.a or x in self.b


def diff_workspace(
    files: Sequence[FileText],
    previous: Mapping[str, PreviousFile],
    *,
    keep: frozenset[str] = frozenset(),
    target_chars: int = TARGET_CHARS,
    max_chars: int = MAX_CHARS,
    taken: Container[str] = frozenset(),
) -> list[Event]:
    """Events for every file moved, added, changed or gone, in that order: moves first
    (by old path), then the files in the order given (a moved and edited file's
    ``FileChanged`` among them), then removals (by path). Paths in
    ``keep`` (present but unreadable now) are left as they are; new ids skip the ids of
    ``previous`` and those in ``taken`` (the ids of the brain's nodes: a file that moved
    away keeps ids of its old path)."""
    seen = {f.path for f in files}
    taken = _Either({c.id for p in previous.values() for c in p.chunks}, taken)
    gone = [p for p in sorted(previous) if p not in seen and p not in keep]
    moves = _moves(files, previous, gone, target_chars=target_chars, max_chars=max_chars)
    events: list[Event] = [
        FileMoved(old_path=old, path=new, content_hash=previous[old].content_hash)
        for new, old in sorted(moves.items(), key=lambda m: m[1])
    ]
    for f in files:
        ev = diff_file(
            f,
            previous[moves[f.path]] if f.path in moves else previous.get(f.path),
            target_chars=target_chars,
            max_chars=max_chars,
            taken=taken,
        )
        if ev is not None:
            events.append(ev)
    moved = set(moves.values())
    for path in gone:
        if path not in moved:
            ids = tuple(c.id for c in previous[path].chunks)
            events.append(FileRemoved(path=path, removed=ids))
    return events
