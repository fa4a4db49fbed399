"""Rendering the log and snapshot checks (``replay``, ``verify``) and the log repair
``verify`` can run first: the stable JSON objects (documented in README.md) and the text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ocb.cli.render.encode import fields, plain

if TYPE_CHECKING:
    from ocb.checks.repair import BrainRepair
    from replay.verify import Finding

Verified = tuple[list["Finding"], "BrainRepair | None"]
"""A verification, and the log repair that ran first (None without ``--repair``)."""


def findings_json(found: list[Finding]) -> dict[str, Any]:
    """``{"ok", "checks": [{"what", "ok", "detail"}]}``."""
    return {"ok": all(f.ok for f in found), "checks": plain(found)}


def findings_text(found: list[Finding]) -> str:
    return "\n".join(f"{'PASS' if f.ok else 'FAIL'}  {f.what}: {f.detail}" for f in found)


def verify_json(got: Verified) -> dict[str, Any]:
    """The findings, and ``{"repair": {...}}`` after ``--repair``: the repair's fields
    with each lost range as ``{first, last}``."""
    found, fixed = got
    out = findings_json(found)
    if fixed is not None:
        repair = fields(fixed)
        repair["lost"] = [{"first": a, "last": b} for a, b in fixed.lost]
        out["repair"] = repair
    return out


def log_repair_text(r: BrainRepair) -> str:
    if not r.changed:
        return "nothing to repair"
    lost = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in r.lost) or "none"
    lines = [
        f"repaired the log: seqs lost (now tombstones): {lost}; "
        f"unfinished batch dropped: {r.torn_bytes} bytes",
        f"  hash chain recomputed from seq {r.rebased_from}; rewrote {len(r.segments)} "
        f"segment(s); removed {r.snapshots_removed} snapshot(s) and the caches",
        f"  recorded as log_repaired at seq {r.recorded}",
    ]
    return "\n".join(lines)
