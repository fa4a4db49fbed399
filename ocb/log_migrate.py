"""``ocb log migrate``: a brain's log copied from its directory to PostgreSQL, or
back, record for record and checked by its hash chain.

To PostgreSQL: the segment log is verified, copied into an empty log (seqs,
timestamps, bytes and chain values kept), its blobs with it; the copy is verified and
its chain compared; then the brain records the shared log and its own log directory
is kept as ``log.local`` (a backup: nothing reads it any more). Back: the shared log
is written as segments in ``log``, checked the same way, every blob is fetched into
the brain, and the brain forgets the shared log (which stays as it is, for the other
brains on it). Snapshots and caches stay valid both ways: the chain is the same.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec

from ocb.shared_log import LOCATION, attach, detach, location, open_shared
from ocb_events.blobs import BlobStore
from ocb_events.clock import system_clock
from ocb_events.errors import BrainNotFound, InputError
from ocb_events.log import SegmentLog, verify_log
from ocb_events.pg.blobs import SharedBlobStore
from ocb_events.pg.conn import Target
from ocb_events.pg.copy import copy_to_postgres, copy_to_segments
from ocb_events.pg.log import PostgresLog
from ocb_events.pg.verify import verify_postgres

__all__ = ["BACKUP", "Migration", "migrate_log"]

BACKUP = "log.local"


class Migration(msgspec.Struct, frozen=True):
    """What ``ocb log migrate`` copied: records, the chain both copies end with, where
    the log now is (a URL without password, or a directory) and blobs copied."""

    records: int
    chain: str
    log: str
    blobs: int


def migrate_log(brain: Path, *, to: str | None = None, to_local: bool = False) -> Migration:
    """Copy the brain's log to PostgreSQL (``to``: a URL) or back (``to_local``).

    Raises:
        InputError: neither or both, or the brain's log is already where asked.
        BrainNotFound: no brain at ``brain``.
        LogCorrupt: the log does not verify (nothing copied).
        LogUnavailable: the server cannot be reached (nothing changed).
        LogError: the target log is not empty, or the copy's chain differs.
    """
    if (to is None) == (not to_local):
        raise InputError(
            "give `to` (a PostgreSQL URL) or `to_local`, one of them",
            "pass `to` to copy the log to PostgreSQL, `to_local` to copy it back",
            param=("to", "to_local"),
        )
    if to is not None:
        return _to_postgres(brain, to)
    return _to_local(brain)


def _to_postgres(brain: Path, url: str) -> Migration:
    held = location(brain)
    if held is not None:
        raise InputError(f"brain {brain} already keeps its log at {held.url}", "nothing to do")
    if not (brain / "log").is_dir():
        raise BrainNotFound(brain)
    if (brain / BACKUP).exists():
        raise InputError(f"{brain / BACKUP} exists", "move it away first")
    verify_log(brain / "log")
    with SegmentLog(brain / "log") as source, PostgresLog(Target.parse(url)) as target:
        last = copy_to_postgres(source, target)
        blobs = BlobStore(brain / "blobs")
        names = sorted(p.name for p in (brain / "blobs").glob("*/*") if len(p.name) == 64)
        for name in names:
            target.put_blob(name, blobs.get(name, verify=True))
        report = verify_postgres(target)
    (brain / "log").rename(brain / BACKUP)  # kept, unread, until its owner removes it
    loc = attach(brain, url)
    return Migration(last, report.chain.hex(), loc.url, len(names))


def _to_local(brain: Path) -> Migration:
    loc = location(brain)
    if loc is None and not (brain / "log").is_dir():
        raise BrainNotFound(brain)
    if loc is None:
        raise InputError(f"brain {brain} keeps its log in {brain / 'log'}", "nothing to do")
    if (brain / "log").exists():
        raise InputError(f"{brain / 'log'} exists", "move it away first")
    fresh = brain / "log.copying"
    shutil.rmtree(fresh, ignore_errors=True)
    source = open_shared(brain, clock=system_clock, create=False)
    assert source is not None
    with source:
        verify_postgres(source)
        last = copy_to_segments(source, fresh)
        chain = source.chain_of(last) or b""
        blobs = SharedBlobStore(brain / "blobs", source)
        names = source.blob_names()
        for name in names:
            blobs.get(name, verify=True)  # fetched into the brain's directory
    fresh.rename(brain / "log")
    detach(brain)
    assert not (brain / LOCATION).exists()
    return Migration(last, chain.hex(), str(brain / "log"), len(names))
