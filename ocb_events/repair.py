"""Repairing a damaged log (``ocb verify --repair``): every intact record is kept, and
every record that is damaged or gone is replaced by a tombstone that keeps its seq.

A log refuses to open when a record is damaged, when a segment is missing, or when it
holds fewer records than it is known to have held (its TAIL, its seals, the brain's
snapshots). The repair walks every segment tolerantly and keeps each frame that is
whole; for a damaged frame it looks for the next whole one and marks the seqs between
as lost; a missing segment's seqs and the seqs the log is known to have held past its
end are lost too. Only an unfinished batch at the very end, that nothing says was
ever committed, is dropped (a torn write, as a writer's own recovery drops it).

Lost seqs stay used: no later record takes a seq (and so a trace id) that something
outside the log may still hold. The hash chain is recomputed from the first record
that changed, so snapshots and caches of the history before the repair are never
loaded with the repaired log. The segments are rewritten one by one (temp file,
fsync, rename), so a crash leaves a log that a second repair finishes.
"""

from __future__ import annotations

import mmap
import os
import zlib
from pathlib import Path

import msgspec

from ocb_events.codec import encode_record
from ocb_events.errors import LogCorrupt, LogWriteFailed
from ocb_events.frames import (
    LOST,
    MAX_FRAME,
    MORE,
    REDACTED,
    ZERO_CHAIN,
    Format,
    content_digest,
    crc_ok,
    encode_frame,
    frame_header,
    frame_ok,
    link,
    map_file,
    read_header,
    segment_header,
)
from ocb_events.marks import Tail, read_seals, read_tail, replace_tail, write_seals
from ocb_events.rewrite import replace_segment, seal_of, sweep_temp
from ocb_events.schema import Record, RecordLost
from ocb_events.segments import Segment, acquire_lock, list_segments, segment_name

TOMBSTONE_ACTOR = "repair"


class Kept(msgspec.Struct, frozen=True):
    """A whole frame, as found."""

    seq: int
    ts: int
    payload: bytes
    flags: int
    chain: bytes
    content: bytes
    size: int  # of the frame, header included


class Lost(msgspec.Struct, frozen=True):
    """A seq whose record is damaged or gone."""

    seq: int
    ts: int
    reason: str
    segment: str
    offset: int


Entry = Kept | Lost


class RepairReport(msgspec.Struct):
    """What a repair did: the seq ranges now tombstones, the bytes of an unfinished
    batch dropped, the first seq whose chain was recomputed (0: none), and the segments
    rewritten."""

    lost: list[tuple[int, int]] = msgspec.field(default_factory=list)
    torn_bytes: int = 0
    rebased_from: int = 0
    segments: list[str] = msgspec.field(default_factory=list)
    last_seq: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.segments)


class _Walk:
    """Entries per segment, read tolerantly, and where the first problem is."""

    def __init__(self) -> None:
        self.entries: dict[int, list[Entry]] = {}
        self.headers: dict[int, bytes] = {}
        self.first_problem = 0
        self.torn_bytes = 0
        self.last_ts = 0

    def problem(self, seq: int) -> None:
        if not self.first_problem or seq < self.first_problem:
            self.first_problem = seq

    def lose(self, first: int, last: int, reason: str, seg: str, offset: int, into: int) -> None:
        if last < first:
            return
        self.problem(first)
        out = self.entries.setdefault(into, [])
        out.extend(Lost(s, self.last_ts, reason, seg, offset) for s in range(first, last + 1))


def _next_whole(buf: bytes | mmap.mmap, start: int, size: int, seq: int, fmt: Format) -> int | None:
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


def _walk_segment(walk: _Walk, seg: Segment, expected: int, last: bool, held: int) -> int:
    """Read one segment into ``walk``; return the next expected seq."""
    if not seg.path.exists():
        return expected  # a segment the log starts with that is gone
    buf, size = map_file(seg.path)
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
        off = fmt.header_size
        while off < size:
            info = frame_header(buf, off, size, fmt)
            whole = (
                info is not None
                and info.seq == expected
                and info.length <= MAX_FRAME
                and info.end <= size
                and crc_ok(buf, info)
            )
            if whole:
                assert info is not None
                start = off + fmt.frame_size
                payload = bytes(buf[start : info.end])
                content = content_digest(buf, info)
                walk.entries.setdefault(seg.first_seq, []).append(
                    Kept(
                        info.seq, info.ts, payload, info.flags, info.chain, content, info.end - off
                    )
                )
                walk.last_ts = max(walk.last_ts, info.ts)
                expected, off = expected + 1, info.end
                continue
            nxt = _next_whole(buf, off + 1, size, expected - 1, fmt)
            if nxt is not None:
                found = frame_header(buf, nxt, size, fmt)
                assert found is not None
                walk.lose(expected, found.seq - 1, "damaged record", seg.name, off, seg.first_seq)
                expected, off = found.seq, nxt
                continue
            complete = info is not None and info.seq == expected and info.end <= size
            if last and not complete and expected > held:
                walk.torn_bytes = size - off  # an unfinished write nothing says was committed
                walk.problem(expected)
            elif complete:
                walk.lose(expected, expected, "damaged record", seg.name, off, seg.first_seq)
                expected += 1
            break
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()
    return expected


def _torn_batch(walk: _Walk, first_seq: int, held: int) -> None:
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


def _claimed(directory: Path, held: int) -> int:
    tail = read_tail(directory)
    seals = read_seals(directory)
    return max([held, tail.last_seq if tail else 0, *(s.last_seq for s in seals.values())])


def _walk(segs: list[Segment], held: int) -> tuple[_Walk, int]:
    walk, expected = _Walk(), 1
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        got = _walk_segment(walk, seg, expected, last, held)
        nxt = segs[i + 1].first_seq if not last else None
        if nxt is not None and got < nxt:
            walk.lose(got, nxt - 1, "records missing", seg.name, 0, seg.first_seq)
            got = nxt
        expected = got
    if segs:
        _torn_batch(walk, segs[-1].first_seq, held)
        entries = walk.entries.get(segs[-1].first_seq, [])
        expected = entries[-1].seq + 1 if entries else segs[-1].first_seq
        if held >= expected:
            walk.lose(expected, held, "records lost", segs[-1].name, 0, segs[-1].first_seq)
            expected = held + 1
    return walk, expected - 1


def _chain_break(walk: _Walk, segs: list[Segment]) -> int:
    """The first seq whose stored chain does not follow from the records before it."""
    chain = ZERO_CHAIN
    for seg in segs:
        if walk.headers.get(seg.first_seq, chain) != chain:
            return seg.first_seq
        for e in walk.entries.get(seg.first_seq, []):
            if isinstance(e, Lost) or not e.chain:
                return e.seq
            chain = link(chain, e.seq, e.ts, e.content)
            if chain != e.chain:
                return e.seq
    return 0


def _tombstone(e: Lost) -> bytes:
    event = RecordLost(reason=e.reason, segment=e.segment, offset=e.offset)
    return encode_record(Record(seq=e.seq, ts=e.ts, actor=TOMBSTONE_ACTOR, event=event))


def _encode(entries: list[Entry], first_seq: int, chain: bytes) -> tuple[bytes, bytes, int, int]:
    """A segment holding ``entries`` chained from ``chain``; its bytes, the chain after
    it, its last seq and last ts."""
    out = bytearray(segment_header(first_seq, chain))
    last_seq, last_ts = first_seq - 1, 0
    for i, e in enumerate(entries):
        if isinstance(e, Lost):
            frame, chain = encode_frame(e.seq, e.ts, _tombstone(e), chain, flags=LOST)
        else:
            more = bool(e.flags & MORE) and i + 1 < len(entries)
            flags = e.flags & (REDACTED | LOST)
            frame, chain = encode_frame(e.seq, e.ts, e.payload, chain, more=more, flags=flags)
        out += frame
        last_seq, last_ts = e.seq, e.ts
    return bytes(out), chain, last_seq, last_ts


def _ranges(walk: _Walk) -> list[tuple[int, int]]:
    seqs = sorted(e.seq for es in walk.entries.values() for e in es if isinstance(e, Lost))
    out: list[tuple[int, int]] = []
    for s in seqs:
        if out and out[-1][1] == s - 1:
            out[-1] = (out[-1][0], s)
        else:
            out.append((s, s))
    return out


def repair_log(directory: Path, *, held: int = 0) -> RepairReport:
    """Repair the log in ``directory`` (taking its writer lock for the time).

    Args:
        held: the last seq the log is known to have held beyond its own marks (the
            newest snapshot's seq); seqs up to it that are gone become tombstones.

    Raises:
        BrainLocked: another process writes the log.
        LogWriteFailed: the disk refused a rewrite (each segment is whole, old or
            repaired; run the repair again).
    """
    directory = Path(directory)
    lock = acquire_lock(directory)
    try:
        sweep_temp(directory)
        segs = list_segments(directory)
        claimed = _claimed(directory, held)
        if (segs and segs[0].first_seq != 1) or (not segs and claimed):
            segs.insert(0, Segment(1, directory / segment_name(1)))  # the first one is gone
        walk, last_seq = _walk(segs, claimed)
        firsts = [s for s in (walk.first_problem, _chain_break(walk, segs)) if s]
        report = RepairReport(_ranges(walk), walk.torn_bytes, 0, [], last_seq)
        if firsts:
            report.rebased_from = min(firsts)
            tail = _rewrite(directory, segs, walk, report)
        else:
            tail = _tail_of(segs, walk)
        if tail is not None:
            # after the segments: a repair killed before this leaves a TAIL that does
            # not match, which the next repair replaces
            replace_tail(directory, tail)
        return report
    except OSError as exc:
        raise LogWriteFailed(directory, exc.strerror or str(exc)) from exc
    finally:
        os.close(lock)


def _tail_of(segs: list[Segment], walk: _Walk) -> Tail | None:
    """The TAIL of an intact log's last segment (its stored chain verified)."""
    if not segs or segs[-1].first_seq not in walk.headers:
        return None
    seg = segs[-1]
    data = seg.path.read_bytes()
    kept = [e for e in walk.entries.get(seg.first_seq, []) if isinstance(e, Kept)]
    if kept:
        last_seq, last_ts, chain = kept[-1].seq, kept[-1].ts, kept[-1].chain
    else:
        last_seq, last_ts, chain = seg.first_seq - 1, walk.last_ts, walk.headers[seg.first_seq]
    return Tail(seg.first_seq, len(data), last_seq, last_ts, chain, zlib.crc32(data))


def _rewrite(
    directory: Path, segs: list[Segment], walk: _Walk, report: RepairReport
) -> Tail | None:
    """Rewrite every segment from the one holding ``report.rebased_from`` on, chaining
    each record from the one before it as the repaired log holds it; returns the TAIL
    of the new last segment."""
    start = report.rebased_from
    seals = {s: v for s, v in read_seals(directory).items() if s < start}
    chain, tail = ZERO_CHAIN, None
    for i, seg in enumerate(segs):
        entries = walk.entries.get(seg.first_seq, [])
        nxt = segs[i + 1].first_seq if i + 1 < len(segs) else None
        if nxt is not None and nxt <= start:
            chain = next((e.chain for e in reversed(entries) if isinstance(e, Kept)), chain)
            continue  # wholly before the first change: its bytes and chains stay
        data, chain, last_seq, last_ts = _encode(entries, seg.first_seq, chain)
        replace_segment(seg.path, data)
        report.segments.append(seg.name)
        if nxt is not None:
            seals[seg.first_seq] = seal_of(seg.path, seg.first_seq, last_seq, last_ts, chain)
        else:
            tail = Tail(seg.first_seq, len(data), last_seq, last_ts, chain, zlib.crc32(data))
    write_seals(directory, seals)
    return tail
