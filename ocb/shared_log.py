"""Where a brain's log lives: in ``<brain>/log`` (segments, the default) or in a
PostgreSQL database that brains on several machines share (``ocb init --log URL``).

A brain on a shared log keeps, in its directory:

* ``shared-log.json``: the log's URL *without* its password, and the workspace
  this machine's copy lives in (each machine has its own path);
* ``shared-log.password`` (mode 0600), only when the URL given to ``ocb init --log``
  carried a password: it is taken out of the URL there and never written elsewhere.
  Without it libpq finds the password itself (``PGPASSWORD``, ``~/.pgpass``);
* ``sync-base.json``: the content hash of each file of this machine's copy as this
  machine last synced it (see ``ocb.graph.copies``);
* its projections, snapshots, caches and a local copy of the blobs it used.

Importing this module does not import the PostgreSQL driver.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ocb.paths import check_brain_path
from ocb_events.blobs import BlobStore
from ocb_events.clock import Clock
from ocb_events.durable import replace_file
from ocb_events.errors import BrainExists, InputError
from ocb_events.protocol import EventLog

if TYPE_CHECKING:  # the shared log's modules load only for a brain that has one
    from ocb_events.pg.conn import Target
    from ocb_events.pg.log import PostgresLog

__all__ = [
    "LOCATION",
    "PASSWORD_FILE",
    "SYNC_BASE",
    "Location",
    "attach",
    "blob_store",
    "detach",
    "location",
    "open_shared",
    "read_bases",
    "verify_shared",
    "write_bases",
]

LOCATION = "shared-log.json"
PASSWORD_FILE = "shared-log.password"
SYNC_BASE = "sync-base.json"


class Location(msgspec.Struct, frozen=True):
    """A brain's shared log: its URL (no password) and this machine's workspace."""

    url: str
    workspace: str = ""


def location(brain: Path) -> Location | None:
    """The shared log a brain records (None: its log is the local segment log)."""
    try:
        return msgspec.json.decode((brain / LOCATION).read_bytes(), type=Location)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, msgspec.DecodeError) as exc:
        raise InputError(
            f"cannot read {brain / LOCATION}: {exc}",
            "initialise the brain again with its log's URL (`log`) to record it",
            param="log",
        ) from None


def attach(brain: Path, url: str, workspace: Path | None = None) -> Location:
    """Record that the brain at ``brain`` keeps its log at ``url`` (the password, if
    the URL has one, goes to a 0600 file beside it). Returns what was recorded.

    Raises:
        InputError: not a PostgreSQL URL; the brain already has a local log, or a
            shared log elsewhere.
        BrainExists: the brain's copy of the workspace is another directory.
    """
    from ocb_events.pg.conn import Target, is_postgres_url, strip_password

    if not is_postgres_url(url):
        raise InputError(
            f"`log` takes a PostgreSQL URL, got {strip_password(url)}",
            "pass `log=postgresql://USER@HOST:PORT/DATABASE`",
            param="log",
        )
    target = Target.parse(url)
    held = location(brain)
    if held is not None and held.url != target.safe:
        raise InputError(
            f"brain {brain} keeps its log at {held.url}, not {target.safe}",
            "use a new brain directory for another log",
            param="log",
        )
    if held is None and (brain / "log").is_dir():
        raise InputError(
            f"brain {brain} has a local log",
            "copy its log to PostgreSQL with `ocb log migrate` first",
            param="log",
        )
    check_brain_path(brain, create=True)
    ws = str(workspace.resolve()) if workspace is not None else (held.workspace if held else "")
    if held is not None and held.workspace and ws != held.workspace:
        raise BrainExists(brain, held.workspace, ws)
    loc = Location(url=target.safe, workspace=ws)
    if target.password:
        replace_file(brain / PASSWORD_FILE, [target.password.encode()], brain / "pw.tmp")
    replace_file(brain / LOCATION, [msgspec.json.encode(loc)], brain / (LOCATION + ".tmp"))
    return loc


def detach(brain: Path) -> None:
    """Forget the shared log (after its records were copied back to ``<brain>/log``)."""
    (brain / LOCATION).unlink(missing_ok=True)
    (brain / PASSWORD_FILE).unlink(missing_ok=True)


def target_of(brain: Path, loc: Location) -> Target:
    """The log's target with the password kept beside the brain (if any)."""
    from ocb_events.pg.conn import Target

    try:
        password: str | None = (brain / PASSWORD_FILE).read_text().strip() or None
    except FileNotFoundError:
        password = None
    return Target.parse(loc.url, password=password)


def open_shared(
    brain: Path, *, clock: Clock, durability: str = "batch", create: bool = True
) -> PostgresLog | None:
    """The shared log of the brain at ``brain`` (None: it has none).

    Raises:
        LogUnavailable: the server cannot be reached or refuses the login.
    """
    loc = location(brain)
    if loc is None:
        return None
    from ocb_events.pg.log import PostgresLog

    return PostgresLog(
        target_of(brain, loc),
        clock=clock,
        durability="none" if durability == "none" else "batch",
        create=create,
    )


def verify_shared(
    brain: Path, seqs: Sequence[int] = ()
) -> tuple[int, str, bytes, list[bytes | None]]:
    """Verify the brain's shared log (``ocb verify``, ``ocb doctor``): its last seq, a
    line saying what was checked, the chain of its last record, and the chain at each
    of ``seqs`` (None past the end).

    Raises:
        LogCorrupt: naming the first damaged seq.
        LogTruncated, LogUnavailable: as ``verify_postgres``.
    """
    from ocb_events.clock import system_clock
    from ocb_events.pg.verify import verify_postgres

    log = open_shared(brain, clock=system_clock, create=False)
    assert log is not None
    with log:
        got = verify_postgres(log)
        chains = [log.chain_of(s) if s <= log.last_seq else None for s in seqs]
    detail = f"{got.records} records in {log.url}: seqs, hash chain, decoding"
    return got.last_seq, detail, got.chain, chains


def blob_store(log: EventLog, directory: Path) -> BlobStore:
    """The blob store that goes with ``log``: blobs in the database for a shared log
    (cached in ``directory``), else in ``directory``."""
    pg = sys.modules.get("ocb_events.pg.log")  # loaded by any PostgresLog
    if pg is not None and isinstance(log, pg.PostgresLog):
        from ocb_events.pg.blobs import SharedBlobStore

        return SharedBlobStore(directory, log)
    return BlobStore(directory)


def read_bases(brain: Path) -> dict[str, str]:
    """The content hash of each file as this machine last synced it."""
    try:
        got = json.loads((brain / SYNC_BASE).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return {str(k): str(v) for k, v in got.items()} if isinstance(got, dict) else {}


def write_bases(brain: Path, bases: dict[str, str]) -> None:
    """Replace the sync bases (written after the records they describe committed)."""
    data = json.dumps(dict(sorted(bases.items())), indent=0).encode()
    replace_file(brain / SYNC_BASE, [data], brain / (SYNC_BASE + ".tmp"))
