"""Rewriting segments in place, the only way a record's bytes ever change: upgrading a
log of the old format, redacting records (``ocb forget``) and repairing a damaged log
(``ocb verify --repair``, see ``ocb_events.repair``).

Every rewrite writes the new segment to a temp file beside it, fsyncs it, renames it
over the old one and fsyncs the directory, so a crash leaves either segment whole.
The caller holds the writer lock. Temp files left by a crash are swept when a writer
opens the log.
"""

from __future__ import annotations

import mmap
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import msgspec

from ocb_events.blocks import (
    Dicts,
    Packed,
    Split,
    assemble,
    is_packed,
    samples,
    split_blocks,
    train,
)
from ocb_events.durable import fsync_dir, replace_file
from ocb_events.errors import LogCorrupt
from ocb_events.frames import (
    LOST,
    MORE,
    REDACTED,
    V2,
    ZERO_CHAIN,
    content_digest,
    encode_frame,
    frame_header,
    frame_ok,
    map_file,
    pack_frame,
    read_header,
    scan,
    segment_header,
)
from ocb_events.marks import Seal, Tail, read_seals, replace_tail, write_seals
from ocb_events.segments import Recovery, Segment, payload_skips

TEMP_SUFFIXES = (".rewrite", ".migrating")


def sweep_temp(directory: Path) -> None:
    """Remove temp files a crashed rewrite or seal left in a log directory."""
    for suffix in TEMP_SUFFIXES:
        for p in directory.glob(f"*.seg{suffix}"):
            p.unlink(missing_ok=True)
    (directory / "SEALS.tmp").unlink(missing_ok=True)
    (directory / "TAIL.tmp").unlink(missing_ok=True)


def replace_segment(path: Path, data: bytes | bytearray, suffix: str = ".rewrite") -> None:
    """Put ``data`` in place of the segment at ``path`` atomically."""
    replace_file(path, [data], path.with_name(path.name + suffix))
    fsync_dir(path.parent)


def seal_of(path: Path, first_seq: int, last_seq: int, last_ts: int, chain: bytes) -> Seal:
    st = path.stat()
    return Seal(first_seq, last_seq, last_ts, chain, st.st_size, st.st_mtime_ns, st.st_ino)


def compress_segment(seg: Segment, offsets: Sequence[int]) -> bool:
    """Store a full segment compressed in blocks (``ocb_events.blocks``; the same
    bytes inside, so its chain and seal content stay), atomically, with dictionaries
    trained on it; ``offsets`` are its frames'. Returns whether it was rewritten (False
    when it already was compressed).

    Raises:
        OSError: the disk refused the write (the segment stays as it was).
    """
    parts = split_segment(seg, offsets)
    return parts is not None and store_compressed(seg, parts, train(samples(parts)))


def split_segment(seg: Segment, offsets: Sequence[int], *, stored: bool = False) -> Split | None:
    """A full segment's bytes cut into blocks, each split into its light and heavy
    parts (``ocb_events.blocks.split_blocks``; ``offsets`` are its frames'), or None
    when it is not to be stored compressed: stored so already (unless ``stored``: then
    its own bytes are read back), or a frame without its checksum (``payload_skips``).
    """
    data = seg.path.read_bytes()
    if is_packed(data):
        if not stored:
            return None
        data = Packed(seg.path).read()
    skips = payload_skips(data, seg, offsets) if offsets else None
    return None if skips is None else split_blocks(data, seg.first_seq, offsets, skips)


def store_compressed(seg: Segment, parts: Split, dicts: Dicts) -> bool:
    """Put the container of a split segment, compressed with ``dicts``, in its place;
    False (the segment left as it was) when its parts would not give it back.

    Raises:
        OSError: the disk refused the write.
    """
    try:
        stored = assemble(parts, dicts)
    except ValueError:
        return False
    replace_segment(seg.path, stored)
    return True


def needs_migration(segs: Iterable[Segment], seals: Mapping[int, Seal]) -> bool:
    """Whether any segment is of the old format (sealed segments are of the new one)."""
    for seg in segs:
        seal = seals.get(seg.first_seq)
        if seal is not None and seal.matches(seg.path.stat()):
            continue
        with open(seg.path, "rb") as fh:
            if fh.read(8) == V2.magic:
                return True
    return False


def migrate_legacy(directory: Path, segs: list[Segment]) -> Recovery | None:
    """Rewrite every old-format segment in the current format, in seq order: the
    records keep their bytes, seqs and timestamps and gain their hash chain. A torn
    tail of the last segment is dropped (and reported).

    Raises:
        LogCorrupt: a damaged record (nothing is rewritten from that segment on).
    """
    chain, last_ts, recovery = ZERO_CHAIN, 0, None
    seals: dict[int, Seal] = {}
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        buf, size = map_file(seg.path)
        try:
            head = read_header(buf, size, seg.name, seg.first_seq)
            if head is None:
                if last:
                    seg.path.unlink()
                    break
                raise LogCorrupt(seg.name, 0, seg.first_seq, "segment has no header")
            fmt = head[0]
            got = scan(
                buf, fmt.header_size, size, first_expected=seg.first_seq, name=seg.name,
                last_ts=last_ts, chain=chain if fmt.chained else b"", fmt=fmt,
            )  # fmt: skip
            if got.torn_at is not None and not last:
                raise LogCorrupt(seg.name, got.torn_at, got.last_seq + 1, "truncated record")
            if fmt.chained:
                chain = got.chain
            else:
                data, chain = _upgrade(buf, seg.first_seq, got.end, chain)
                if got.torn_at is not None:
                    recovery = Recovery(seg.name, got.torn_at, size - got.torn_at, got.last_seq)
        finally:
            if isinstance(buf, mmap.mmap):
                buf.close()
        if not fmt.chained:
            replace_segment(seg.path, data, ".migrating")
        last_ts = got.last_ts
        if not last:
            seals[seg.first_seq] = seal_of(seg.path, seg.first_seq, got.last_seq, last_ts, chain)
    write_seals(directory, seals)
    (directory / "TAIL").unlink(missing_ok=True)  # the old format's; the writer writes anew
    return recovery


def _upgrade(buf: bytes | mmap.mmap, first_seq: int, end: int, chain: bytes) -> tuple[bytes, bytes]:
    out = bytearray(segment_header(first_seq, chain))
    off = V2.header_size
    while off < end:
        info = frame_header(buf, off, end, V2)
        assert info is not None
        payload = bytes(buf[off + V2.frame_size : info.end])
        frame, chain = encode_frame(info.seq, info.ts, payload, chain, more=info.more)
        out += frame
        off = info.end
    return bytes(out), chain


def redact_records(
    directory: Path, segs: list[Segment], payloads: Mapping[int, bytes], tail: Tail | None
) -> None:
    """Replace the payload of each record in ``payloads`` (by seq) with the given record
    bytes, flagged redacted and keeping the original payload's digest, so seqs,
    framing, checksums and the hash chain all still verify. Updates the seals of the
    rewritten segments and, from ``tail`` (what the writer holds), the TAIL.

    Raises:
        OSError: the disk refused a write (every segment is whole, old or new).
    """
    seals = read_seals(directory)
    firsts = [s.first_seq for s in segs]
    by_seg: dict[int, list[int]] = {}
    for seq in sorted(payloads):
        first = max(f for f in firsts if f <= seq)
        by_seg.setdefault(first, []).append(seq)
    for seg in segs:
        if seg.first_seq not in by_seg:
            continue
        data, end = _redacted(seg, payloads)
        if seg.first_seq in seals:
            replace_segment(seg.path, data)
            old = seals[seg.first_seq]
            seals[seg.first_seq] = seal_of(
                seg.path, old.first_seq, old.last_seq, old.last_ts, old.chain
            )
        elif tail is not None and tail.first_seq == seg.first_seq:
            replace_tail(directory, None)
            replace_segment(seg.path, data)
            crc = zlib.crc32(data[:end])
            replace_tail(directory, msgspec.structs.replace(tail, offset=end, prefix_crc=crc))
        else:
            replace_segment(seg.path, data)
    write_seals(directory, seals)


def _redacted(seg: Segment, payloads: Mapping[int, bytes]) -> tuple[bytes, int]:
    buf, size = map_file(seg.path)
    try:
        head = read_header(buf, size, seg.name, seg.first_seq)
        assert head is not None and head[0].chained
        fmt = head[0]
        out = bytearray(buf[: fmt.header_size])
        off = fmt.header_size
        while off < size:
            info = frame_ok(buf, off, size, fmt)
            if info is None:
                raise LogCorrupt(seg.name, off, -1, "damaged record found while redacting")
            if info.seq in payloads:
                payload = content_digest(buf, info) + payloads[info.seq]
                flags = REDACTED | (info.flags & (MORE | LOST))
                out += pack_frame(info.seq, info.ts, info.chain, payload, flags)
            else:
                out += buf[info.offset : info.end]
            off = info.end
        return bytes(out), len(out)
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()
