"""Reading a damaged log tolerantly (``ocb verify --repair`` and the head checks of
``ocb verify``): every whole frame as found, and every seq whose record is damaged or
gone.

A frame is whole when its header fits, its seq is the one expected, its payload fits
and its crc holds. For a damaged frame the walk looks for the next whole one and marks
the seqs between as lost; a missing segment's seqs and the seqs the log is known to
have held past its end are lost too. Only an unfinished batch at the very end, that
nothing says was ever committed, is dropped (a torn write, as a writer's own recovery
drops it). A lost record's chain value is kept when its frame header can still be
read: the record after it can then still be checked against the chain.
"""

from __future__ import annotations

import mmap
from pathlib import Path

import msgspec

from ocb_events.errors import LogCorrupt
from ocb_events.frames import (
    CURRENT,
    DIGEST_BYTES,
    MAX_FRAME,
    MORE,
    Buffer,
    Format,
    FrameInfo,
    content_digest,
    crc_ok,
    frame_header,
    frame_ok,
    map_file,
    read_header,
)
from ocb_events.marks import read_seals, read_tail
from ocb_events.segments import Segment

_CHAIN_AT = CURRENT.frame_size - DIGEST_BYTES
"""Where a frame header of the current format holds its chain value."""


class Kept(msgspec.Struct, frozen=True):
    """A whole frame, as found (``payload`` empty when the walk was asked not to keep
    payloads; ``content`` is what the chain takes of it)."""

    seq: int
    ts: int
    payload: bytes
    flags: int
    chain: bytes
    content: bytes
    size: int  # of the frame, header included
    offset: int = 0


class Lost(msgspec.Struct, frozen=True):
    """A seq whose record is damaged or gone; ``chains`` holds the chain values still
    readable in the header of its damaged frame (empty when none is)."""

    seq: int
    ts: int
    reason: str
    segment: str
    offset: int
    chains: tuple[bytes, ...] = ()


Entry = Kept | Lost


class Salvage:
    """Entries per segment (by first seq), read tolerantly; the chain value in each
    chained segment's header; the first seq with a problem, the bytes of an unfinished
    batch at the end and the last seq the log holds or is known to have held."""

    def __init__(self, keep_payloads: bool = True) -> None:
        self.entries: dict[int, list[Entry]] = {}
        self.headers: dict[int, bytes] = {}
        self.first_problem = 0
        self.torn_bytes = 0
        self.last_ts = 0
        self.last_seq = 0
        self.keep_payloads = keep_payloads

    def problem(self, seq: int) -> None:
        if not self.first_problem or seq < self.first_problem:
            self.first_problem = seq

    def lose(
        self,
        first: int,
        last: int,
        reason: str,
        at: tuple[str, int, int],
        chains: tuple[bytes, ...] = (),
    ) -> None:
        """Mark ``first..last`` lost (``at``: segment name, offset, the segment's first
        seq); ``chains`` are the candidates read for ``last``."""
        if last < first:
            return
        self.problem(first)
        seg, offset, into = at
        out = self.entries.setdefault(into, [])
        for s in range(first, last + 1):
            out.append(Lost(s, self.last_ts, reason, seg, offset, chains if s == last else ()))

    def flat(self) -> list[Entry]:
        """Every entry in seq order."""
        return [e for first in sorted(self.entries) for e in self.entries[first]]


def _next_whole(buf: Buffer, start: int, size: int, seq: int, fmt: Format) -> int | None:
    """The offset of the nearest whole frame past ``start`` whose seq follows ``seq``."""
    best: int | None = None
    for k in range(1, 65):
        needle = (seq + k).to_bytes(8, "little")
        pos = buf.find(needle, start)
        while pos >= 0:
            head = pos - 8
            if head >= start and frame_ok(buf, head, size, fmt) is not None:
                if best is None or head < best:
                    best = head
                break
            pos = buf.find(needle, pos + 1)
    return best


def _chains_of(
    buf: Buffer, start: int, end: int, seq: int, fmt: Format, *, at_start: bool
) -> tuple[bytes, ...]:
    """The chain values still readable in ``[start, end)`` in a frame header of ``seq``:
    the header at ``start`` when the damaged frame there is that of ``seq``
    (``at_start``), and any header whose packed seq is ``seq`` (at most four)."""
    if not fmt.chained:
        return ()
    heads = [start] if at_start else []
    needle = seq.to_bytes(8, "little")
    pos = buf.find(needle, start)
    while 0 <= pos < end and len(heads) < 4:
        if pos - 8 > start:
            heads.append(pos - 8)
        pos = buf.find(needle, pos + 1)
    out: list[bytes] = []
    for head in heads:
        if head + fmt.frame_size <= end:
            chain = bytes(buf[head + _CHAIN_AT : head + fmt.frame_size])
            if chain not in out:
                out.append(chain)
    return tuple(out)


def _keep(walk: Salvage, buf: Buffer, seg: Segment, info: FrameInfo, fmt: Format) -> int:
    """Keep the whole frame ``info``; returns where it ends."""
    start = info.offset + fmt.frame_size
    payload = bytes(buf[start : info.end]) if walk.keep_payloads else b""
    size = info.end - info.offset
    content = content_digest(buf, info)
    kept = Kept(info.seq, info.ts, payload, info.flags, info.chain, content, size, info.offset)
    walk.entries.setdefault(seg.first_seq, []).append(kept)
    walk.last_ts = max(walk.last_ts, info.ts)
    return info.end


def _walk_frames(
    walk: Salvage, buf: Buffer, size: int, seg: Segment, fmt: Format, last: bool, held: int
) -> int:
    """Read the frames of one segment into ``walk``; return the next expected seq."""
    off, expected = fmt.header_size, seg.first_seq
    while off < size:
        info = frame_header(buf, off, size, fmt)
        if (
            info is not None
            and info.seq == expected
            and info.length <= MAX_FRAME
            and info.end <= size
            and crc_ok(buf, info)
        ):
            expected, off = expected + 1, _keep(walk, buf, seg, info, fmt)
            continue
        nxt = _next_whole(buf, off + 1, size, expected - 1, fmt)
        if nxt is not None:
            found = frame_header(buf, nxt, size, fmt)
            assert found is not None
            chains = _chains_of(
                buf, off, nxt, found.seq - 1, fmt, at_start=found.seq - 1 == expected
            )
            at = (seg.name, off, seg.first_seq)
            walk.lose(expected, found.seq - 1, "damaged record", at, chains)
            expected, off = found.seq, nxt
            continue
        complete = info is not None and info.seq == expected and info.end <= size
        if last and not complete and expected > held:
            walk.torn_bytes = size - off  # an unfinished write nothing says was committed
            walk.problem(expected)
        elif complete:
            chains = _chains_of(buf, off, size, expected, fmt, at_start=True)
            walk.lose(expected, expected, "damaged record", (seg.name, off, seg.first_seq), chains)
            expected += 1
        break
    return expected


def _walk_segment(walk: Salvage, seg: Segment, expected: int, last: bool, held: int) -> int:
    """Read one segment into ``walk``; return the next expected seq."""
    if not seg.path.exists():
        return expected  # a segment the log starts with that is gone
    buf, size = map_file(seg.path, lenient=True)
    try:
        try:
            head = read_header(buf, size, seg.name, seg.first_seq)
        except LogCorrupt:  # an unreadable header: the records it held are unknown
            head = None
        if head is None:
            if last and size and expected > held:
                walk.torn_bytes += size  # a last segment whose header never made it
                walk.problem(expected)
            return expected  # the caller marks what the segment should have held
        fmt = head[0]
        if fmt.chained:
            walk.headers[seg.first_seq] = head[1]
        return _walk_frames(walk, buf, size, seg, fmt, last, held)
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()


def _torn_batch(walk: Salvage, first_seq: int, held: int) -> None:
    """Drop a batch whose last frame never made it, unless it was committed."""
    entries = walk.entries.get(first_seq, [])
    k = len(entries)
    while k:
        e = entries[k - 1]
        if not (isinstance(e, Kept) and e.flags & MORE):
            break
        k -= 1
    if k < len(entries) and isinstance(entries[-1], Kept) and entries[-1].seq > held:
        dropped = entries[k:]
        walk.torn_bytes += sum(e.size for e in dropped if isinstance(e, Kept))
        walk.problem(dropped[0].seq)
        del entries[k:]


def claimed(directory: Path, held: int) -> int:
    """The last seq the log is known to have held: by its TAIL, its seals or ``held``."""
    tail = read_tail(directory)
    seals = read_seals(directory)
    return max([held, tail.last_seq if tail else 0, *(s.last_seq for s in seals.values())])


def salvage(segs: list[Segment], held: int, *, keep_payloads: bool = True) -> Salvage:
    """Walk every segment of ``segs`` tolerantly (``held``: the last seq the log is known
    to have held, see ``claimed``)."""
    walk, expected = Salvage(keep_payloads), 1
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        got = _walk_segment(walk, seg, expected, last, held)
        nxt = segs[i + 1].first_seq if not last else None
        if nxt is not None and got < nxt:
            walk.lose(got, nxt - 1, "records missing", (seg.name, 0, seg.first_seq))
            got = nxt
        expected = got
    if segs:
        _torn_batch(walk, segs[-1].first_seq, held)
        entries = walk.entries.get(segs[-1].first_seq, [])
        expected = entries[-1].seq + 1 if entries else segs[-1].first_seq
        if held >= expected:
            walk.lose(expected, held, "records lost", (segs[-1].name, 0, segs[-1].first_seq))
            expected = held + 1
    walk.last_seq = expected - 1
    return walk
