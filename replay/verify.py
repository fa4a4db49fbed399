"""Checking a brain's history end to end: the log's framing, checksums and seq
continuity; every snapshot's checksum, content hash and equality with a rebuild at its
seq; and the live projections (snapshot + tail) against a full rebuild."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from ocb_events.errors import OcbError
from ocb_events.log import verify_log
from ocb_events.protocol import EventLog
from projections import PROJECTIONS, fold
from replay.snapshots import SnapshotInfo, SnapshotStore, load_states

Progress = Callable[[int, int], None]


PASS, WARN, FAIL, SKIP = "pass", "warn", "fail", "skip"


class Check(msgspec.Struct, frozen=True):
    """One check of a brain: what was checked, its status (``pass``, ``warn``,
    ``fail`` or ``skip``) and a one-line detail. The one type of every check: the
    history's verification here, the brain's and the typed memory's doctor."""

    name: str
    status: str
    detail: str

    @property
    def ok(self) -> bool:
        """Whether it holds (anything but a failure)."""
        return self.status != FAIL

    @property
    def what(self) -> str:
        """What was checked (the name)."""
        return self.name


def held(name: str, ok: bool, detail: str) -> Check:
    """A check that passes or fails."""
    return Check(name, PASS if ok else FAIL, detail)


def verify_segments(directory: Path) -> Check:
    """Framing, checksums, decoding and seq continuity of every log segment."""
    try:
        reports = verify_log(directory)
    except OcbError as exc:
        return held("log", False, exc.message)
    n = sum(r.records for r in reports)
    return held(
        "log", True, f"{n} records in {len(reports)} segment(s): framing, checksums, seqs, chain"
    )


def verify_snapshots(
    log: EventLog, store: SnapshotStore, progress: Progress | None = None
) -> list[Check]:
    """Every snapshot of every projection: crc32, sha256, and equality with the state
    a fold of the log reaches at its seq (one pass over the log)."""
    infos = sorted(
        (i for name in sorted(PROJECTIONS) for i in store.list(name)),
        key=lambda i: (i.seq, i.name),
    )
    findings: list[Check] = []
    states: dict[str, Any] = {name: PROJECTIONS[name].initial() for name in PROJECTIONS}
    at = 0
    for info in infos:
        if info.seq > log.last_seq:
            findings.append(_found(info, False, f"covers seq {info.seq}, past the log's end"))
            continue
        if info.seq > at:
            fold(log.read(at + 1, info.seq, light=True), states)
            at = info.seq
            if progress is not None:
                progress(at, log.last_seq)
        if store.chain(info) != log.chain_of(info.seq):
            findings.append(_found(info, False, "belongs to another history; ignored when loading"))
            continue
        findings.append(_check(store, info, states[info.name]))
    return findings


def _found(info: SnapshotInfo, ok: bool, detail: str) -> Check:
    return held(f"snapshot {info.path.name}", ok, detail)


def _check(store: SnapshotStore, info: SnapshotInfo, state: Any) -> Check:
    body = store.read(info)
    if body is None:
        return _found(info, False, "damaged (checksum or header); it is ignored when loading")
    if not store.digest_ok(info):
        return _found(info, False, "content hash mismatch; it is ignored when loading")
    if PROJECTIONS[info.name].snapshot(state) != body:
        return _found(info, False, f"differs from a rebuild at seq {info.seq}")
    return _found(info, True, f"equals a rebuild at seq {info.seq}")


def verify_live(log: EventLog, store: SnapshotStore, names: Sequence[str] = ()) -> list[Check]:
    """The projections as a brain loads them (newest snapshot + tail) against a full
    rebuild, byte for byte."""
    names = list(names) or sorted(PROJECTIONS)
    live = load_states(log, store, names)
    full = {name: PROJECTIONS[name].initial() for name in names}
    fold(log.read(1, log.last_seq, light=True), full)
    out = []
    for name in names:
        a, b = PROJECTIONS[name].snapshot(live[name]), PROJECTIONS[name].snapshot(full[name])
        detail = f"{len(a):,} bytes at seq {log.last_seq}"
        out.append(held(f"projection {name}", a == b, detail if a == b else "differs: " + detail))
    return out
