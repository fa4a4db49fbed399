"""The integrity checks of a log: those it runs when it opens, before any command may
read or append (a last segment created but never written, full segments changed since
they were sealed, the bytes the TAIL covers, the records the log is known to have
held), and ``verify_log``, which checks every frame of every segment end to end.

NOTE: a redacted frame keeps the digest of the payload it replaced, so the chain does
not cover its redacted content; it is valid only when a later ``content_forgotten``
record, which the chain does cover, names its seq."""

from __future__ import annotations

import mmap
import zlib
from collections.abc import Iterable
from pathlib import Path

import msgspec

from ocb_events.codec import decode_record
from ocb_events.errors import LogCorrupt, LogTruncated
from ocb_events.frames import (
    CURRENT,
    HEAD,
    LENGTH_MASK,
    MORE,
    REDACTED,
    Format,
    map_file,
    scan,
)
from ocb_events.marks import Seal, Tail, read_seals, read_tail
from ocb_events.schema import ContentForgotten, Record
from ocb_events.segments import (
    Segment,
    list_segments,
    locate_damage,
    segment_head,
    segment_name,
    verify_segment,
)


def drop_unwritten(segs: list[Segment], tail: Tail | None, *, writer: bool) -> None:
    """Drop (a writer: delete) a last segment without a complete header: created but
    never written, unless the TAIL says records were committed to it.

    Raises:
        LogTruncated: the TAIL names records in a segment that lost its header.
    """
    while segs:
        seg = segs[-1]
        if segment_head(seg) is not None:
            return
        if tail is not None and tail.first_seq == seg.first_seq:
            if tail.last_seq >= seg.first_seq:
                raise LogTruncated(
                    seg.first_seq - 1, tail.last_seq, f"TAIL; {seg.name} lost its header"
                )
        if writer:
            seg.path.unlink()
        segs.pop()


def check_sealed(segs: list[Segment], seals: dict[int, Seal]) -> bool:
    """Verify every full segment that changed since it was sealed (``seals`` gains the
    new seals); True when a seal was written or renewed. A changed segment must still
    hold the records its seal names, ending on the same chain (a redaction keeps both).

    Raises:
        LogCorrupt: a damaged record, records missing between segments, or a sealed
            segment whose records were replaced.
    """
    changed = False
    if segs and segs[0].first_seq != 1:
        raise LogCorrupt(segs[0].name, 0, 1, f"the log starts at seq {segs[0].first_seq}")
    prev: Seal | None = None
    for seg, nxt in zip(segs, segs[1:], strict=False):
        seal = seals.get(seg.first_seq)
        if seal is None or not seal.matches(seg.path.stat()):
            old, (seal, _) = seal, verify_segment(seg, prev)
            if old is not None and old.last_seq > seal.last_seq:
                raise LogCorrupt(seg.name, seal.size, seal.last_seq + 1, "record missing")
            if old is not None and (old.last_seq, old.chain) != (seal.last_seq, seal.chain):
                raise LogCorrupt(seg.name, 0, seg.first_seq, "records replaced since it was sealed")
            if seg.fmt is not None and seg.fmt.chained:
                seals[seg.first_seq] = seal
                changed = True
        else:
            seg.fmt = CURRENT
        if seal.last_seq + 1 != nxt.first_seq:
            raise LogCorrupt(seg.name, seal.size, seal.last_seq + 1, "record missing")
        prev = seal
    return changed


def check_tail(
    buf: bytes | mmap.mmap,
    size: int,
    seg: Segment,
    fmt: Format,
    tail: Tail,
    chain: bytes,
    last_ts: int,
) -> int:
    """The segment must still hold, unchanged, the bytes the TAIL covers; returns
    their crc32.

    Raises:
        LogTruncated: the segment is shorter than the TAIL's end.
        LogCorrupt: those bytes changed (naming the first damaged record).
    """
    if tail.offset > size or tail.offset < fmt.header_size:
        got = scan(
            buf, fmt.header_size, size, first_expected=seg.first_seq, name=seg.name,
            last_ts=last_ts, chain=chain, fmt=fmt,
        )  # fmt: skip
        raise LogTruncated(
            got.last_seq,
            tail.last_seq,
            f"TAIL; {seg.name} holds {size} bytes, it had {tail.offset}",
        )
    with memoryview(buf)[: tail.offset] as covered:
        crc = zlib.crc32(covered)
    if crc != tail.prefix_crc:
        locate_damage(buf, seg, fmt, tail.offset, chain)
    return crc


def check_claims(tail: Tail | None, seals: Iterable[Seal], last_seq: int) -> None:
    """The log must hold every record its TAIL and its seals name.

    Raises:
        LogTruncated: naming the lost seqs and what says they existed.
    """
    held, why = 0, ""
    if tail is not None and tail.last_seq > held:
        held, why = tail.last_seq, "its TAIL checkpoint says so"
    for seal in seals:
        if seal.last_seq > held:
            held, why = seal.last_seq, f"the seal of {segment_name(seal.first_seq)} says so"
    if held > last_seq:
        raise LogTruncated(last_seq, held, why)


class SegmentReport(msgspec.Struct, frozen=True):
    """The result of verifying one segment end to end (``chain``: the chain value of its
    last record, empty for the old format)."""

    segment: str
    records: int
    first_seq: int
    last_seq: int
    chained: bool = True
    chain: bytes = b""


def verify_log(directory: Path) -> list[SegmentReport]:
    """Check framing, checksums, decoding, seq continuity and the hash chain of every
    segment, that every redacted record is named by a later ``content_forgotten`` (the
    chain covers the digest a redacted frame keeps, not its redacted content), and that
    the log holds everything its TAIL and seals name.

    Raises:
        LogCorrupt: naming the first bad seq and its offset.
        LogTruncated: records the log held are gone.
        UnknownEventType: a record this version cannot decode.
    """
    directory = Path(directory)
    reports: list[SegmentReport] = []
    tail = read_tail(directory)
    segs = list_segments(directory)
    expected, prev = 1, None
    redactions = Redactions()
    for i, seg in enumerate(segs):
        if seg.first_seq != expected:
            raise LogCorrupt(seg.name, 0, expected, f"segment starts at seq {seg.first_seq}")
        last = i == len(segs) - 1
        if last and seg.path.stat().st_size < CURRENT.header_size and segment_head(seg) is None:
            break  # created but never written
        seal, end = verify_segment(seg, prev, last=last)
        _decode_all(seg, end, redactions)
        assert seg.fmt is not None
        n, chained = seal.last_seq - expected + 1, seg.fmt.chained
        chain = seal.chain if chained else b""
        reports.append(SegmentReport(seg.name, n, expected, seal.last_seq, chained, chain))
        expected, prev = seal.last_seq + 1, seal
    redactions.check()
    check_claims(tail, read_seals(directory).values(), expected - 1)
    return reports


UNNAMED_REDACTION = "redacted, but no later content_forgotten record names it"


class Redactions:
    """The redacted records of a log (seq: segment and offset) and the seqs that the
    ``content_forgotten`` records after them name. Only a record in a frame that is not
    itself redacted names anything: the chain covers its content."""

    def __init__(self) -> None:
        self.redacted: dict[int, tuple[str, int]] = {}
        self.named: set[int] = set()

    def add(self, rec: Record, redacted: bool, segment: str, offset: int) -> None:
        if redacted:
            self.redacted[rec.seq] = (segment, offset)
        else:
            self.name(rec)

    def name(self, rec: Record) -> None:
        """Count the seqs ``rec`` names, if it is a ``content_forgotten`` record."""
        if isinstance(rec.event, ContentForgotten):
            self.named.update(s for s in rec.event.seqs if s < rec.seq)

    def unnamed(self) -> list[int]:
        return sorted(s for s in self.redacted if s not in self.named)

    def check(self) -> None:
        """Raises LogCorrupt naming the first redacted record nothing names."""
        for seq in self.unnamed()[:1]:
            segment, offset = self.redacted[seq]
            raise LogCorrupt(segment, offset, seq, UNNAMED_REDACTION)


def _decode_all(seg: Segment, end: int, redactions: Redactions) -> None:
    fmt = seg.fmt
    assert fmt is not None
    buf, _ = map_file(seg.path)
    try:
        off = fmt.header_size
        mask = LENGTH_MASK if fmt.chained else ~MORE
        while off < end:
            word = HEAD.unpack_from(buf, off)[1]
            stop = off + fmt.frame_size + (word & mask)
            redacted = bool(fmt.chained and word & REDACTED)
            skip = 16 if redacted else 0
            with memoryview(buf)[off + fmt.frame_size + skip : stop] as payload:
                rec = decode_record(payload, segment=seg.name, offset=off)
            redactions.add(rec, redacted, seg.name, off)
            off = stop
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()
