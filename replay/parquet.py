"""A brain's history as Parquet files: every view of the analytics store written to
``<dir>/<view>/day=YYYY-MM-DD/*.parquet`` (hive partitioning by the UTC day of each
row's record), each row with the brain's id and name, so that DuckDB, Spark or Trino
read many brains' exports as one table with a glob.

NOTE: besides ``replay.analytics``, the one module that opens the store's file, with
its own read-only connection that may write files (``COPY ... TO``): it runs only SQL
written here, never a user's. The caller holds the store caught up and locked shared.

Rows without a time of their own take their record's: ``steps``, ``fired`` and
``seeds`` their trace's, ``nodes`` and ``edges`` (the present) the day of the store's
last record. An export directory holds ``MARKER`` (JSON: the brain, the seq exported,
each view's rows); a directory that holds files but no export of the same brain is
refused unless ``force``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from pathlib import Path

import duckdb
import msgspec

from ocb_events.errors import AnalyticsError, InputError
from replay.store_meta import History
from replay.tables import TABLES
from replay.worker import first_line

MARKER = "ocb-export.json"
"""The file naming the brain an export directory holds (written last)."""

_DAY_OF = {
    "steps": "JOIN store.events e USING (seq)",
    "fired": "JOIN store.events e USING (seq)",
    "seeds": "JOIN store.events e USING (seq)",
}
"""How a view without ``ts`` finds its rows' record time (``e.ts``)."""
_PRESENT = ("nodes", "edges")
_CONFIG = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "python_enable_replacements": False,
}
_OPENING = threading.Lock()


class ViewExport(msgspec.Struct, frozen=True):
    """One view written: its rows, files and bytes."""

    view: str
    rows: int
    files: int
    bytes: int


class ParquetExport(msgspec.Struct, frozen=True):
    """What ``export_parquet`` wrote: the directory, the brain (``brain_id``: a digest
    of its first record, the same for every copy of the brain), the seq exported and
    every view."""

    dir: str
    brain_id: str
    brain: str
    last_seq: int
    views: list[ViewExport]

    @property
    def bytes(self) -> int:
        return sum(v.bytes for v in self.views)


def brain_id(log: History) -> str:
    """A stable id of the brain whose log this is: a digest of its first record as
    decoded (so a rewrite of the log in another storage format keeps it)."""
    first = next(iter(log.read(1, 1)), None)
    if first is None:
        return ""
    return hashlib.sha256(msgspec.json.encode(first)).hexdigest()[:16]


def check_dir(dest: Path, ident: str, force: bool) -> None:
    """Refuse a file, or a directory holding anything but an export of this brain
    (InputError), unless ``force``."""
    if dest.exists() and not dest.is_dir():
        raise InputError(f"{dest} is a file", "name a directory (new, empty or an export)")
    if not dest.is_dir() or force or not any(dest.iterdir()):
        return
    try:
        found = json.loads((dest / MARKER).read_text())
    except (OSError, ValueError):
        found = None
    if isinstance(found, dict) and found.get("brain_id") == ident:
        return
    what = "another brain's export" if isinstance(found, dict) else "files that are no export"
    raise InputError(
        f"{dest} holds {what}",
        "choose a new or empty directory, or pass `force` to replace its views",
        param="force",
    )


def _select(view: str, last_ts: int) -> str:
    names = "v.*"  # the view's columns (edges: with its tier)
    if view in _PRESENT:
        day = f"CAST(make_timestamp_ns({int(last_ts)}) AS DATE)"
        return f"SELECT {names}, $1 AS brain_id, $2 AS brain, {day} AS day FROM main.{view} v"
    if view in _DAY_OF:
        join = _DAY_OF[view]
        return (
            f"SELECT {names}, $1 AS brain_id, $2 AS brain, CAST(e.ts AS DATE) AS day "
            f"FROM main.{view} v {join}"
        )
    return (
        f"SELECT {names}, $1 AS brain_id, $2 AS brain, CAST(v.ts AS DATE) AS day FROM main.{view} v"
    )


def _written(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*.parquet") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def _write_views(
    con: duckdb.DuckDBPyConnection, tmp: Path, ident: str, name: str
) -> tuple[list[ViewExport], int]:
    row = con.execute("SELECT last_seq FROM store.meta").fetchone()
    last_seq = int(row[0]) if row else 0
    row = con.execute("SELECT epoch_ns(max(ts)) FROM store.events").fetchone()
    last_ts = int(row[0]) if row and row[0] is not None else 0
    views = []
    for view in TABLES:
        count = con.execute(f"SELECT count(*) FROM main.{view}").fetchone()
        rows = int(count[0]) if count else 0
        if rows:
            target = str(tmp / view).replace("'", "''")
            con.execute(
                f"COPY ({_select(view, last_ts)}) TO '{target}' "
                "(FORMAT PARQUET, PARTITION_BY (day), COMPRESSION zstd)",
                [ident, name],
            )
        files, size = _written(tmp / view)
        views.append(ViewExport(view, rows, files, size))
    return views, last_seq


def export_parquet(
    store: Path, dest: Path, *, brain_id: str, brain: str, force: bool = False
) -> ParquetExport:
    """Write every view of the analytics store at ``store`` (caught up, held shared by
    the caller) into ``dest`` as Parquet partitioned by day; views of an earlier export
    are replaced one by one, each whole.

    Raises:
        InputError: ``dest`` is a file, or holds files but no export of this brain
            (unless ``force``).
        AnalyticsError: DuckDB or the file system failed (nothing is half-replaced:
            a view is written aside, then moved into place).
    """
    check_dir(dest, brain_id, force)
    tmp = dest / f".ocb-export-{os.getpid()}"
    try:
        dest.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        with _OPENING:
            con = duckdb.connect(str(store), read_only=True, config=dict(_CONFIG))
        try:
            views, last_seq = _write_views(con, tmp, brain_id, brain)
        finally:
            con.close()
        for v in views:
            shutil.rmtree(dest / v.view, ignore_errors=True)
            if (tmp / v.view).exists():
                (tmp / v.view).rename(dest / v.view)
        marker = {
            "brain_id": brain_id,
            "brain": brain,
            "last_seq": last_seq,
            "views": {v.view: v.rows for v in views},
        }
        (dest / MARKER).write_text(json.dumps(marker, indent=1) + "\n")
    except duckdb.Error as exc:
        raise AnalyticsError(first_line(exc), "check the directory, or retry") from exc
    except OSError as exc:
        raise AnalyticsError(
            f"cannot write the export into {dest}: {exc.strerror or exc}",
            "check the directory's permissions and free space",
        ) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return ParquetExport(str(dest), brain_id, brain, last_seq, views)
