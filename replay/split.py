"""The second process of a rebuild split by projection (``replay.rebuild``): a fresh
interpreter folds some of the projections over the same records while the rebuild
folds the others, and hands back each state's snapshot bytes, which the rebuild
restores. Both fold every record they read in log order, the fast way
(``replay.folding``), so the states are the ones a one-process rebuild gives, byte for
byte.

It runs as ``python -m replay.split`` (no fork: a fresh interpreter that imports only
what folding needs), reads one msgpack ``Job`` from stdin (the log: a segment
directory, or a PostgreSQL target, whose password thus never shows in a list of
processes), and writes one msgpack ``Handoff`` to stdout. It exits with status 3,
writing nothing, when the log's history up to the job's end is not the one its chain
names (both processes must fold the same records).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec

from ocb_events.log import SegmentLog
from ocb_events.pg.conn import Target
from ocb_events.protocol import EventLog
from projections import PROJECTIONS
from replay.folding import fold_fast, read_for

__all__ = [
    "COMMAND",
    "OTHER_HISTORY",
    "Handoff",
    "Job",
    "finish",
    "handoff",
    "job_of",
    "main",
    "start",
]

OTHER_HISTORY = 3
"""The exit status of a second process that found another history up to the end."""

COMMAND = ["-m", "replay.split"]
"""The interpreter's arguments that run the second process."""


class Job(msgspec.Struct, array_like=True):
    """What the second process folds: ``names`` over records ``1..end`` of the segment
    log in ``directory`` or the PostgreSQL log at ``target``, whose chain at ``end``
    is ``chain``."""

    directory: str
    target: Target | None
    end: int
    chain: bytes | None
    names: list[str]


class Handoff(msgspec.Struct, array_like=True):
    """What the second process hands back: each projection's snapshot bytes."""

    snapshots: dict[str, bytes]


def job_of(log: EventLog, names: list[str], end: int) -> Job | None:
    """The job that folds ``names`` over ``log`` up to ``end`` in a second process
    (None for a log that another process cannot open: a log in memory ...)."""
    if isinstance(log, SegmentLog):
        return Job(str(log.directory), None, end, log.chain_of(end), names)
    pg = sys.modules.get("ocb_events.pg.log")  # loaded by any PostgresLog
    if pg is not None and isinstance(log, pg.PostgresLog):
        return Job("", log.target, end, log.chain_of(end), names)
    return None


def start(job: Job) -> subprocess.Popen[bytes] | None:
    """Start a second process on ``job`` (None when no interpreter can be started: an
    embedded Python, no processes left)."""
    if not sys.executable:
        return None
    try:
        proc = subprocess.Popen(
            [sys.executable, *COMMAND],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError:
        return None
    stdin, proc.stdin = proc.stdin, None  # written once here, not by ``communicate``
    assert stdin is not None
    try:
        with stdin:
            stdin.write(msgspec.msgpack.encode(job))
    except OSError:  # it died at once: ``finish`` says why
        pass
    return proc


def finish(proc: subprocess.Popen[bytes], names: list[str]) -> Handoff | str:
    """The snapshots of ``names`` the second process handed back, or why it did not
    (one line)."""
    out, err = proc.communicate()
    if proc.returncode == OTHER_HISTORY:
        return "its log's history up to the end differs"
    if proc.returncode != 0:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        return f"it exited with status {proc.returncode}" + (f": {lines[-1]}" if lines else "")
    try:
        got = msgspec.msgpack.decode(out, type=Handoff)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return f"its answer could not be read ({exc})"
    return got if set(got.snapshots) == set(names) else "it folded other projections"


def handoff(log: EventLog, names: list[str], end: int) -> Handoff:
    """``names`` folded over records ``1..end`` of ``log``, as snapshot bytes."""
    states = fold_fast(read_for(log, names, 1, end), {n: PROJECTIONS[n].initial() for n in names})
    return Handoff({n: PROJECTIONS[n].snapshot(states[n]) for n in names})


def main(data: bytes) -> bytes | None:
    """The handoff of the job in ``data``, or None when the log's history up to its
    end is not the one the job names."""
    job = msgspec.msgpack.decode(data, type=Job)
    with _open(job) as log:
        if job.end > log.last_seq or log.chain_of(job.end) != job.chain:
            return None
        return msgspec.msgpack.encode(handoff(log, job.names, job.end))


def _open(job: Job) -> Any:
    if job.target is None:
        return SegmentLog(Path(job.directory), writer=False)
    from ocb_events.pg.log import PostgresLog  # the driver only when the log needs it

    return PostgresLog(job.target, create=False)


if __name__ == "__main__":
    got = main(sys.stdin.buffer.read())
    if got is None:
        sys.exit(OTHER_HISTORY)
    sys.stdout.buffer.write(got)
