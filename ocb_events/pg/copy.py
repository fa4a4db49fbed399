"""Copying a log between a segment directory and PostgreSQL, record for record: the
same seqs, timestamps, bytes and chain values (a redacted record keeps the digest of
what it replaced), so the copy is checked by comparing chains.

NOTE: frames are written in the segment format of ``ocb_events.frames`` (one record
per batch); opening the directory as a writer seals and checks them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ocb_events.durable import fsync_dir, private_dir, replace_file
from ocb_events.errors import LogError
from ocb_events.frames import (
    DIGEST_BYTES,
    REDACTED,
    ZERO_CHAIN,
    frame_ok,
    map_file,
    pack_frame,
    read_header,
    segment_header,
)
from ocb_events.log import SEGMENT_BYTES, SegmentLog
from ocb_events.pg.log import PostgresLog, StoredRecord
from ocb_events.segments import list_segments, segment_name

__all__ = ["copy_to_postgres", "copy_to_segments", "segment_records"]


def segment_records(log: SegmentLog) -> Iterator[StoredRecord]:
    """The records of a segment log as stored (to its last seq), for ``copy_in``."""
    for seg in list_segments(log.directory):
        buf, size = map_file(seg.path)
        head = read_header(buf, size, seg.name, seg.first_seq)
        if head is None or not head[0].chained:
            raise LogError(
                f"segment {seg.name} is of an old format", "open the brain once as a writer"
            )
        fmt, off = head[0], head[0].header_size
        while (info := frame_ok(buf, off, size, fmt)) is not None and info.seq <= log.last_seq:
            payload = bytes(buf[off + info.header : info.end])
            original = None
            if info.flags & REDACTED:
                original, payload = payload[:DIGEST_BYTES], payload[DIGEST_BYTES:]
            yield StoredRecord(info.seq, info.ts, info.chain, original, payload)
            off = info.end


def copy_to_postgres(source: SegmentLog, target: PostgresLog) -> int:
    """Copy every record of ``source`` into the empty log ``target``; returns the
    last seq.

    Raises:
        LogError: ``target`` is not empty, or the copy's chain differs (nothing kept).
    """
    last = target.copy_in(segment_records(source))
    if target.chain_of(last) != source.chain_of(source.last_seq) or last != source.last_seq:
        raise LogError(f"the copy in {target.url} does not end with the log's chain")
    return last


def copy_to_segments(source: PostgresLog, directory: Path) -> int:
    """Write every record of ``source`` as segments in the new directory
    ``directory``, then open it as a writer (which checks and seals them); returns the
    last seq.

    Raises:
        LogError: ``directory`` holds segments, or the copy's chain differs.
    """
    private_dir(directory)
    if list_segments(directory):
        raise LogError(f"{directory} already holds a log", "copy into an empty directory")
    chain = before = ZERO_CHAIN  # the chain before the segment being filled
    first, frames, size = 1, list[bytes](), 0
    for row in source.stored():
        if size >= SEGMENT_BYTES:
            _write_segment(directory, first, before, frames)
            first, before, frames, size = row.seq, chain, [], 0
        body = row.payload if row.original is None else row.original + row.payload
        frame = pack_frame(row.seq, row.ts, row.chain, body, REDACTED if row.original else 0)
        frames.append(frame)
        size += len(frame)
        chain = row.chain
    if frames:
        _write_segment(directory, first, before, frames)
    fsync_dir(directory)
    with SegmentLog(directory) as log:
        if log.last_seq != source.last_seq or log.chain_of(log.last_seq) != source.chain_of(
            source.last_seq
        ):
            raise LogError(f"the copy in {directory} does not end with the log's chain")
        return log.last_seq


def _write_segment(directory: Path, first: int, prev: bytes, frames: list[bytes]) -> None:
    path = directory / segment_name(first)
    replace_file(path, [segment_header(first, prev), *frames], path.with_suffix(".tmp"))
