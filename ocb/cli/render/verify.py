"""Rendering the log and snapshot checks (``replay``, ``verify``) and the log repair
``verify`` can run first as text (the JSON objects are ``ocb.wire``'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocb.checks.repair import BrainRepair
    from ocb.checks.rewrite import BrainRewrite
    from ocb.wire.reports import Verified
    from replay.verify import Check


def findings_text(found: list[Check]) -> str:
    return "\n".join(f"{c.status.upper():4}  {c.name}: {c.detail}" for c in found)


def verify_text(got: Verified) -> str:
    """The findings, then ``head  SEQ:HEX`` (what ``--head`` takes) when the log verifies."""
    found, _ = got
    text = findings_text(found.checks)
    return text if found.head is None else f"{text}\nhead  {found.head.text}"


def _seqs(ranges: list[tuple[int, int]]) -> str:
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges) or "none"


def log_rewrite_text(r: BrainRewrite) -> str:
    log = r.log
    mib = f"{log.bytes_before / 2**20:.1f} MiB -> {log.bytes_after / 2**20:.1f} MiB"
    if not log.first_changed:
        return f"rewrote the log: {log.records} records, none changed their bytes; {mib}"
    return (
        f"rewrote the log: {log.records} records, {log.changed} in the compact format; "
        f"{mib}\n  hash chain recomputed from seq {log.first_changed}: the head was "
        f"{log.old_head[0]}:{log.old_head[1]}, is {log.new_head[0]}:{log.new_head[1]}; "
        f"removed {r.snapshots_removed} snapshot(s) and the caches; recorded as seq "
        f"{r.recorded}"
    )


def log_repair_text(r: BrainRepair) -> str:
    if not r.changed:
        return "nothing to repair"
    lines = [
        f"repaired the log: seqs lost (now tombstones): {_seqs(r.lost)}; "
        f"unfinished batch dropped: {r.torn_bytes} bytes"
    ]
    if r.tampered:
        lines.append(
            f"  records that did not match their hash chain (tampered): {_seqs(r.tampered)}"
        )
    if r.unconfirmed:
        lines.append(
            f"  kept, but the record after each does not link to it (it or that record was "
            f"edited; a head kept at its seq tells which): {_seqs([(s, s) for s in r.unconfirmed])}"
        )
    if r.renewed:
        lines.append(
            f"  renewed {', '.join(r.renewed)}: they no longer matched records that all link "
            "(a rewrite killed before them, or records rewritten with their chain: only a "
            "head kept elsewhere tells which)"
        )
    chain = f"hash chain recomputed from seq {r.rebased_from}" if r.rebased_from else "chain kept"
    lines += [
        f"  {chain}; rewrote {len(r.segments)} segment(s); removed {r.snapshots_removed} "
        "snapshot(s) and the caches",
        f"  recorded as log_repaired at seq {r.recorded}",
    ]
    return "\n".join(lines)
