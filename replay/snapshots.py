"""Snapshots: projection checkpoints tied to the seq they cover.

A snapshot file is ``MAGIC``, ``<Q seq``, ``<Q length``, ``<I crc32``, the sha256 of
the body and the log's hash chain at ``seq``, then the body (the projection's
canonical bytes). It is written to a temp file, fsynced and renamed (the temp file is
removed if that fails, and swept when a writer opens the brain). Loading checks the
crc32 and that the chain is the log's chain at that seq, so a snapshot of another
history (a log repaired or restored from a backup since) is never loaded; ``verify``
also checks the sha256 (the snapshot's content hash) and that the body equals a
rebuild at its seq. A snapshot that fails a check, or that this version cannot decode,
is never trusted: it is reported and skipped (a writer deletes one of another
history), and the projection is rebuilt from an older snapshot or from the log (and
snapshotted again).

Retention: the newest snapshot of each projection, plus one checkpoint per interval
of ``checkpoint_every`` seqs (the earliest snapshot in each interval), so that time
travel to any point starts from a snapshot at most about one interval behind it.
Snapshots are derived data: deleting any or all of them is always safe.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from ocb_events.durable import private_dir, replace_file
from ocb_events.protocol import EventLog
from projections import PROJECTIONS, fold
from replay.folding import fold_fast, read_for

MAGIC = b"OCBSNAP4"
_HEAD = struct.Struct("<8sQQI32s16s")
CHECKPOINT_EVERY = 10_000
FAST_TAIL = 1_000
"""Records from which a tail is folded the fast way (``replay.folding``): a shorter
one folds record by record. Since weight updates are stored packed, which the fast
way reads a run at a time and the record-by-record fold decodes one by one, an as-of
query on the 100k-event pg mix (snapshots every 10,000 records) takes ~95 ms against
~300 ms with tails up to 20,000 folded record by record."""

Warn = Callable[[str], None]
ChainOf = Callable[[int], bytes | None]


class SnapshotInfo(msgspec.Struct, frozen=True):
    """One snapshot file on disk."""

    name: str
    seq: int
    path: Path


class SnapshotStore:
    """Snapshot files of every projection in one directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def list(self, name: str) -> list[SnapshotInfo]:
        """Snapshots of ``name``, newest first."""
        out = []
        for p in self.directory.glob(f"{name}-*.snap"):
            tail = p.name[len(name) + 1 : -5]
            if len(tail) == 20 and tail.isdigit():
                out.append(SnapshotInfo(name, int(tail), p))
        return sorted(out, key=lambda s: -s.seq)

    def save(
        self,
        name: str,
        seq: int,
        body: bytes,
        *,
        chain: bytes,
        checkpoint_every: int = CHECKPOINT_EVERY,
    ) -> Path:
        """Write a snapshot of ``name`` at ``seq`` of the history whose chain there is
        ``chain``, then keep only the newest snapshot and one checkpoint per interval of
        ``checkpoint_every`` seqs.

        Raises:
            OSError: the disk refused the write (no temp file is left behind).
        """
        private_dir(self.directory)
        path = self.directory / f"{name}-{seq:020d}.snap"
        tmp = path.with_suffix(".tmp")
        digest = hashlib.sha256(body).digest()
        head = _HEAD.pack(MAGIC, seq, len(body), zlib.crc32(body), digest, chain)
        replace_file(path, [head, body], tmp)
        self._retain(name, max(1, checkpoint_every))
        return path

    def newest_seq(self) -> int:
        """The highest seq any snapshot covers (0 when there is none)."""
        best = 0
        for p in self.directory.glob("*-*.snap"):
            tail = p.name[-25:-5]
            if tail.isdigit():
                best = max(best, int(tail))
        return best

    def sweep(self) -> None:
        """Remove temp files a failed or killed write left behind."""
        for p in self.directory.glob("*.tmp"):
            p.unlink(missing_ok=True)

    def chain(self, info: SnapshotInfo) -> bytes | None:
        """The hash chain a snapshot was taken at, or None when it is unreadable."""
        try:
            with open(info.path, "rb") as fh:
                head = fh.read(_HEAD.size)
        except OSError:
            return None
        if len(head) < _HEAD.size or head[:8] != MAGIC:
            return None
        return bytes(_HEAD.unpack(head)[5])

    def _retain(self, name: str, every: int) -> None:
        snaps = self.list(name)  # newest first
        keep = {snaps[0].seq} if snaps else set()
        first_in_bucket: dict[int, int] = {}
        for info in snaps:
            first_in_bucket[info.seq // every] = info.seq  # ends on the earliest
        keep |= set(first_in_bucket.values())
        for info in snaps:
            if info.seq not in keep:
                info.path.unlink(missing_ok=True)

    def digest_ok(self, info: SnapshotInfo) -> bool:
        """Whether the snapshot's body matches its recorded sha256 (its content hash)."""
        try:
            raw = info.path.read_bytes()
        except OSError:
            return False
        if len(raw) < _HEAD.size:
            return False
        digest = _HEAD.unpack_from(raw, 0)[4]
        return bool(hashlib.sha256(raw[_HEAD.size :]).digest() == digest)

    def read(self, info: SnapshotInfo) -> bytes | None:
        """The body of a snapshot, or None when it is damaged."""
        try:
            raw = info.path.read_bytes()
        except OSError:
            return None
        if len(raw) < _HEAD.size:
            return None
        magic, seq, length, crc, _digest, _chain = _HEAD.unpack_from(raw, 0)
        body = raw[_HEAD.size :]
        if magic != MAGIC or seq != info.seq or len(body) != length or zlib.crc32(body) != crc:
            return None
        return body

    def load(
        self,
        name: str,
        max_seq: int,
        warn: Warn | None = None,
        *,
        chain_of: ChainOf | None = None,
        discard: bool = False,
    ) -> Any | None:
        """The newest intact snapshot state of ``name`` at or before ``max_seq`` whose
        chain is ``chain_of(seq)``; with ``discard``, snapshots of another history are
        deleted."""
        module = PROJECTIONS[name]
        for info in self.list(name):
            if info.seq > max_seq:
                continue
            if chain_of is not None and not self._same_history(info, chain_of, warn, discard):
                continue
            body = self.read(info)
            state = None
            if body is not None:
                try:
                    state = module.restore(body)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    state = None  # written by another version of the projection
            if state is None:
                if warn is not None:
                    warn(f"snapshot {info.path.name} is damaged or outdated; ignored and rebuilt")
                continue
            return state
        return None

    def _same_history(
        self, info: SnapshotInfo, chain_of: ChainOf, warn: Warn | None, discard: bool
    ) -> bool:
        want = chain_of(info.seq)
        got = self.chain(info)
        if want is not None and got is not None and got != want:
            if warn is not None:
                warn(
                    f"snapshot {info.path.name} belongs to another history (the log was "
                    "repaired or restored since); ignored and rebuilt"
                )
            if discard:
                info.path.unlink(missing_ok=True)
            return False
        return want is not None  # a log without a chain cannot vouch for a snapshot


def load_states(
    log: EventLog,
    store: SnapshotStore,
    names: list[str],
    *,
    to_seq: int | None = None,
    warn: Warn | None = None,
    discard: bool = False,
) -> dict[str, Any]:
    """Projections at ``to_seq`` (default: the end), from snapshots of this very history
    plus the tail (``discard``: delete snapshots of another history)."""
    end = log.last_seq if to_seq is None else min(to_seq, log.last_seq)
    states: dict[str, Any] = {}
    for name in names:
        state = store.load(name, end, warn, chain_of=log.chain_of, discard=discard)
        states[name] = state if state is not None else PROJECTIONS[name].initial()
    start = min((s.seq for s in states.values()), default=end) + 1
    if end - start + 1 >= FAST_TAIL:
        fold_fast(read_for(log, names, start, end), states)
    elif start <= end:
        fold(log.read(start, end, light=True), states)
    return states
