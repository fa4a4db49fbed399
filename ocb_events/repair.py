"""Repairing a damaged log (``ocb verify --repair``): every intact record is kept, and
every record that is damaged, gone or does not match its hash chain is replaced by a
tombstone that keeps its seq.

A log refuses to open when a record is damaged, when a segment is missing, or when it
holds fewer records than it is known to have held (its TAIL, its seals, the brain's
snapshots). The repair reads every segment tolerantly (``ocb_events.salvage``), then
checks every whole record against the chain around it (``ocb_events.links``): a record
edited with its checksum fixed no longer gives the chain value the next record was
chained from, and becomes a tombstone, as does a redacted record that no
``content_forgotten`` record names; a repair never gives an edited record a fresh
chain.

Lost seqs stay used: no later record takes a seq (and so a trace id) that something
outside the log may still hold. The hash chain is recomputed from the first record
that changed, so snapshots and caches of the history before the repair are never
loaded with the repaired log. The segments are rewritten one by one (temp file,
fsync, rename), the seals of those about to change dropped first, so a crash leaves a
log that a second repair finishes.

A log whose records all link but whose own marks (the TAIL, a seal) no longer match
them was changed in a way the chain cannot show (records rewritten with a consistent
chain, or frame flags); the repair renews those marks and names them: only a head of
the chain kept elsewhere tells whether the history was rewritten.
"""

from __future__ import annotations

import mmap
import os
import zlib
from pathlib import Path

import msgspec

from ocb_events.codec import encode_record
from ocb_events.errors import LogWriteFailed
from ocb_events.frames import (
    LOST,
    MORE,
    REDACTED,
    ZERO_CHAIN,
    encode_frame,
    link,
    map_file,
    segment_header,
)
from ocb_events.links import judge, unnamed_redactions
from ocb_events.marks import Seal, Tail, read_seals, read_tail, replace_tail, write_seals
from ocb_events.rewrite import replace_segment, seal_of, sweep_temp
from ocb_events.salvage import Entry, Kept, Lost, Salvage, claimed, salvage
from ocb_events.schema import Record, RecordLost
from ocb_events.segments import Segment, acquire_lock, list_segments, segment_name

TOMBSTONE_ACTOR = "repair"


class RepairReport(msgspec.Struct):
    """What a repair did: the seq ranges now tombstones (``lost``) and, among them,
    those whose record did not match its hash chain (``tampered``); the bytes of an
    unfinished batch dropped; the first seq whose chain was recomputed (0: none); the
    segments rewritten; the marks renewed (``TAIL``, ``SEALS``) because records that
    all link no longer matched them; the records kept as they were although the next
    record does not link to them (``unconfirmed``: they or the next were edited)."""

    lost: list[tuple[int, int]] = msgspec.field(default_factory=list)
    torn_bytes: int = 0
    rebased_from: int = 0
    segments: list[str] = msgspec.field(default_factory=list)
    last_seq: int = 0
    tampered: list[tuple[int, int]] = msgspec.field(default_factory=list)
    renewed: list[str] = msgspec.field(default_factory=list)
    unconfirmed: list[int] = msgspec.field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.segments or self.renewed)


def _chain_break(walk: Salvage, segs: list[Segment]) -> int:
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


def _ranges(seqs: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s in sorted(seqs):
        if out and out[-1][1] == s - 1:
            out[-1] = (out[-1][0], s)
        else:
            out.append((s, s))
    return out


def _condemn(walk: Salvage, segs: list[Segment]) -> tuple[list[int], list[int]]:
    """Turn every whole record that does not match its chain into a lost one (its ts
    that of the entry before it, as a lost record's is); returns their seqs, and those
    of the records kept unconfirmed."""
    entries = walk.flat()
    verdict = judge(entries, walk.headers)
    unnamed = unnamed_redactions(entries, verdict.lost)
    if unnamed:
        verdict = judge(entries, walk.headers, unnamed)
    found = verdict.lost
    names = {s.first_seq: s.name for s in segs}
    ts = 0
    for first in sorted(walk.entries):
        out: list[Entry] = []
        for e in walk.entries[first]:
            if isinstance(e, Kept) and e.seq in found:
                e = Lost(e.seq, ts, found[e.seq], names[first], e.offset)
                walk.problem(e.seq)
            out.append(e)
            ts = e.ts
        walk.entries[first] = out
    return sorted(found), verdict.unconfirmed


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
        known = claimed(directory, held)
        if (segs and segs[0].first_seq != 1) or (not segs and known):
            segs.insert(0, Segment(1, directory / segment_name(1)))  # the first one is gone
        walk = salvage(segs, known)
        tampered, unconfirmed = _condemn(walk, segs)
        lost = [e.seq for e in walk.flat() if isinstance(e, Lost)]
        report = RepairReport(
            _ranges(lost), walk.torn_bytes, 0, [], walk.last_seq, _ranges(tampered)
        )
        report.unconfirmed = unconfirmed
        firsts = [s for s in (walk.first_problem, _chain_break(walk, segs)) if s]
        if firsts:
            report.rebased_from = min(firsts)
            report.renewed = _renew_seals(directory, segs, walk, report.rebased_from)
            tail = _rewrite(directory, segs, walk, report)
        else:
            tail = _renew(directory, segs, walk, report)
        if tail is not None:
            # after the segments: a repair killed before this leaves a TAIL that does
            # not match, which the next repair replaces
            replace_tail(directory, tail)
        return report
    except OSError as exc:
        raise LogWriteFailed(directory, exc.strerror or str(exc)) from exc
    finally:
        os.close(lock)


def _tail_of(segs: list[Segment], walk: Salvage) -> Tail | None:
    """The TAIL of an intact log's last segment (its stored chain verified)."""
    if not segs or segs[-1].first_seq not in walk.headers:
        return None
    seg = segs[-1]
    buf, _ = map_file(seg.path, lenient=True)
    data = bytes(buf)
    if isinstance(buf, mmap.mmap):
        buf.close()
    kept = [e for e in walk.entries.get(seg.first_seq, []) if isinstance(e, Kept)]
    if kept:
        last_seq, last_ts, chain = kept[-1].seq, kept[-1].ts, kept[-1].chain
    else:
        last_seq, last_ts, chain = seg.first_seq - 1, walk.last_ts, walk.headers[seg.first_seq]
    return Tail(seg.first_seq, len(data), last_seq, last_ts, chain, zlib.crc32(data))


def _renew(
    directory: Path, segs: list[Segment], walk: Salvage, report: RepairReport
) -> Tail | None:
    """The TAIL of a log whose records all link; its seals renewed where they name
    other records (``report.renewed`` says which marks no longer matched)."""
    tail = _tail_of(segs, walk)
    report.renewed = _renew_seals(directory, segs, walk)
    if tail is not None and _tail_changed(directory, tail):
        report.renewed.insert(0, "TAIL")
    return tail


def _tail_changed(directory: Path, tail: Tail) -> bool:
    """Whether the TAIL says the bytes it covered were different (its records were
    changed, the chain still linking)."""
    old = read_tail(directory)
    if old is None or old.first_seq != tail.first_seq or old.offset > tail.offset:
        return False
    seg = directory / segment_name(tail.first_seq)
    with open(seg, "rb") as fh:
        covered = fh.read(old.offset)
    return zlib.crc32(covered) != old.prefix_crc


def _renew_seals(
    directory: Path, segs: list[Segment], walk: Salvage, before: int | None = None
) -> list[str]:
    """Seal again every full segment wholly before seq ``before`` (all of them for
    None) whose seal names another last record or chain (its records were replaced,
    the chain still linking); returns ``["SEALS"]`` when any was."""
    seals = read_seals(directory)
    renewed = False
    for seg, nxt in zip(segs, segs[1:], strict=False):
        if before is not None and nxt.first_seq > before:
            break
        old = seals.get(seg.first_seq)
        kept = [e for e in walk.entries.get(seg.first_seq, []) if isinstance(e, Kept)]
        if old is None or not kept or (old.last_seq, old.chain) == (kept[-1].seq, kept[-1].chain):
            continue
        e = kept[-1]
        seals[seg.first_seq] = seal_of(seg.path, seg.first_seq, e.seq, e.ts, e.chain)
        renewed = True
    if renewed:
        write_seals(directory, seals)
    return ["SEALS"] if renewed else []


def _rewrite(
    directory: Path, segs: list[Segment], walk: Salvage, report: RepairReport
) -> Tail | None:
    """Rewrite every segment from the one holding ``report.rebased_from`` on, chaining
    each record from the one before it as the repaired log holds it; returns the TAIL
    of the new last segment."""
    start = report.rebased_from
    firsts = [s.first_seq for s in segs]
    keep_from = max((f for f in firsts if f <= start), default=1)
    seals: dict[int, Seal] = {s: v for s, v in read_seals(directory).items() if s < keep_from}
    write_seals(directory, seals)  # before any segment changes: a crash leaves no stale seal
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
