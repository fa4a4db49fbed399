"""Checking every record of a damaged log against the hash chain around it: which ones
a repair keeps, which ones become tombstones, and which records a chain value taken
earlier still vouches for.

NOTE: a repair recomputes the chain from its first change, so whatever it keeps after
that point is blessed with a fresh chain; the rules here make sure that never happens
to a record whose content the chain cannot confirm.

Each frame stores ``chain = H(chain before | seq | ts | digest(content))`` (see
``ocb_events.frames``). What can be checked of record ``n``, from the frames alone:

* **back**: it links from a chain value that may be the one before it: the chain
  stored in frame ``n-1``; the chain frame ``n-1``'s content gives from the values
  before it (when its own stored value was changed); the chain still readable in the
  header of a damaged frame ``n-1``; or the value a segment's header names for the
  record before its first.
* **forward**: record ``n+1`` links from a chain value that record ``n``'s content
  gives. This confirms the content of ``n``: nobody can make an edited record give the
  value the next record was chained from.

A record is kept when the next record confirms it (its stored chain value is then
corrected if it was changed). It becomes a tombstone when the next record continues
from its stored chain value, which its content does not give (an edit with its
checksum fixed), or when it links from nothing before it and nothing after it confirms
it. When the next record links from nothing of this one (or only from the value its
segment's header names, as after a repair stopped between two segments), the two
cannot be told apart: either this record was edited together with its own chain value,
or the next one was edited. The next one becomes a tombstone if it does not link, and
this one is kept only if the repair leaves its bytes and chain as they are; if its
chain would be recomputed it becomes a tombstone too. A whole record with no whole
record after it (the last, or one before a damaged one) is kept when it links back.

A redacted frame keeps the digest of the payload it replaced, so the chain does not
cover its redacted content: it is kept only when a later ``content_forgotten`` record
(in a frame that is not itself redacted) names its seq.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import msgspec

from ocb_events.codec import decode_record
from ocb_events.errors import OcbError
from ocb_events.frames import REDACTED, ZERO_CHAIN, link
from ocb_events.integrity import UNNAMED_REDACTION, Redactions
from ocb_events.salvage import Entry, Kept, Lost, claimed, salvage
from ocb_events.segments import Segment, list_segments, segment_name

UNLINKED = "did not match its hash chain (tampered, or damaged with its checksum intact)"
UNCHECKED = "its hash chain could not be checked: the record before it is damaged or lost"
UNCONFIRMED = (
    "the record after it does not link to it and its chain would be recomputed "
    "(tampered or damaged)"
)
_MAX_CANDIDATES = 8
_FORGOTTEN = b"content_forgotten"


class Link(msgspec.Struct, frozen=True):
    """What the chain says of one entry: the values it may have been chained from
    (``back``), the one it links from (``via``, None when none) and the chain its
    content gives from each of ``back`` (``derived``)."""

    back: tuple[bytes, ...]
    via: bytes | None
    derived: tuple[bytes, ...]


def _back(
    entries: list[Entry], links: list[Link], i: int, starts: dict[int, bytes]
) -> tuple[bytes, ...]:
    e = entries[i]
    out: list[bytes] = []
    if e.seq == 1:
        out.append(ZERO_CHAIN)
    elif i > 0:
        p = entries[i - 1]
        if isinstance(p, Lost):
            out.extend(p.chains)
        else:
            if p.chain:
                out.append(p.chain)
            if links[i - 1].via is None or not p.chain:
                out.extend(links[i - 1].derived)
    if e.seq in starts:
        out.append(starts[e.seq])
    return tuple(dict.fromkeys(out))[:_MAX_CANDIDATES]


def link_all(entries: list[Entry], starts: dict[int, bytes]) -> list[Link]:
    """The ``Link`` of every entry (in seq order, from seq 1); ``starts`` maps a
    segment's first seq to the chain its header names for the record before."""
    out: list[Link] = []
    for i, e in enumerate(entries):
        back = _back(entries, out, i, starts)
        if isinstance(e, Lost):
            out.append(Link(back, None, ()))
            continue
        derived = tuple(link(c, e.seq, e.ts, e.content) for c in back)
        via = next((c for c, d in zip(back, derived, strict=True) if d == e.chain), None)
        out.append(Link(back, via, derived))
    return out


def _natural(entries: list[Entry], i: int) -> bytes | None:
    """The chain value stored just before entry ``i`` (None after a lost one)."""
    if entries[i].seq == 1:
        return ZERO_CHAIN
    p = entries[i - 1] if i else None
    return p.chain if isinstance(p, Kept) else None


def _verdict(entries: list[Entry], links: list[Link], i: int, fresh: bool) -> str | None:
    """Why the whole record ``entries[i]`` becomes a tombstone; "" when it is kept, None
    when it is kept unconfirmed (the next record does not link to it, and its bytes and
    chain stay as they are). ``fresh``: whether the repair gives it a new chain."""
    e, own = entries[i], links[i]
    if not isinstance(e, Kept) or not e.chain:
        return ""  # an old-format record carries no chain to check
    nxt = entries[i + 1] if i + 1 < len(entries) else None
    chained_next = isinstance(nxt, Kept) and bool(nxt.chain)
    after = links[i + 1].via if chained_next else None
    after_lost = e.seq > 1 and (i == 0 or isinstance(entries[i - 1], Lost))
    why = UNCHECKED if after_lost and own.via is None else UNLINKED
    if after is not None and after in own.derived:
        return ""
    if after is not None and after == e.chain or own.via is None:
        return why
    if not chained_next:
        return ""
    # the next record links from nothing this one gives (at most from its segment's
    # header, as after a repair stopped between two segments): either may have changed
    return UNCONFIRMED if fresh else None


class Judgement(msgspec.Struct, frozen=True):
    """What a repair does with the whole records of a log: those that become tombstones
    (``lost``, by seq, with the reason) and those it keeps as they are although the
    record after them does not link to them (``unconfirmed``: either they or the next
    record were edited, which only a head kept at their seq can tell)."""

    lost: dict[int, str]
    unconfirmed: list[int]


def judge(
    entries: list[Entry], starts: dict[int, bytes], condemned: Mapping[int, str] | None = None
) -> Judgement:
    """Check every whole record against the chain around it (see the module docstring):
    ``entries`` from seq 1 in order, ``starts`` the chain each segment's header names
    for the record before its first, by that first seq; ``condemned`` records become
    tombstones whatever their chain says (with that reason)."""
    links = link_all(entries, starts)
    lost: dict[int, str] = {}
    unconfirmed: list[int] = []
    diverged = False  # whether the repaired chain before the current entry is new
    for i, e in enumerate(entries):
        if isinstance(e, Lost) or (condemned and e.seq in condemned):
            if isinstance(e, Kept) and condemned:
                lost[e.seq] = condemned[e.seq]
            diverged = True
            continue
        why = _verdict(entries, links, i, diverged)
        if why:
            lost[e.seq] = why
            diverged = True
            continue
        if why is None:
            unconfirmed.append(e.seq)
        if links[i].via is None or links[i].via != _natural(entries, i):
            diverged = True
    return Judgement(lost, unconfirmed)


def unnamed_redactions(entries: list[Entry], lost: Mapping[int, str]) -> dict[int, str]:
    """The whole redacted records that no later ``content_forgotten`` record names (one
    kept, in a frame not itself redacted, and not in ``lost``), with the reason."""
    found = Redactions()
    for e in entries:
        if not isinstance(e, Kept) or e.seq in lost:
            continue
        if e.flags & REDACTED:
            found.redacted[e.seq] = ("", e.offset)
        elif _FORGOTTEN in e.payload:
            try:
                found.name(decode_record(e.payload))
            except OcbError:
                continue
    return dict.fromkeys(found.unnamed(), UNNAMED_REDACTION)


class Vouch(msgspec.Struct, frozen=True):
    """The chain value stored at ``seq`` (None when that record is lost, damaged,
    unchained or past ``last_seq``, the log's end) and the first seq of the records it
    vouches for (``first``: 1 when the whole history up to ``seq`` links)."""

    seq: int
    chain: bytes | None
    first: int
    last_seq: int


def _vouched_from(entries: list[Entry], links: list[Link], seq: int) -> int:
    first = seq + 1
    for i in range(seq - 1, -1, -1):
        if links[i].via is None or links[i].via != _natural(entries, i):
            break
        first = entries[i].seq
    return first


def vouch(directory: Path, seqs: list[int]) -> list[Vouch]:
    """What the chain value stored at each of ``seqs`` vouches for, read tolerantly (a
    damaged log too): going back from it while each record links from the value
    stored before it.

    Raises:
        OSError: a segment cannot be read.
    """
    directory = Path(directory)
    segs = list_segments(directory)
    if segs and segs[0].first_seq != 1:
        segs.insert(0, Segment(1, directory / segment_name(1)))
    walk = salvage(segs, claimed(directory, 0), keep_payloads=False)
    entries = walk.flat()
    links = link_all(entries, walk.headers)
    out = []
    for seq in seqs:
        e = entries[seq - 1] if 0 < seq <= len(entries) else None
        if not isinstance(e, Kept) or not e.chain:
            out.append(Vouch(seq, None, seq + 1, walk.last_seq))
        else:
            out.append(Vouch(seq, e.chain, _vouched_from(entries, links, seq), walk.last_seq))
    return out
