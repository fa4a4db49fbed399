"""Rendering the log and snapshot checks (``replay``, ``verify``) and the log repair
``verify`` can run first: the stable JSON objects (documented in README.md) and the text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ocb.cli.render.encode import fields

if TYPE_CHECKING:
    from ocb.checks.repair import BrainRepair
    from replay.verify import Check

Verified = tuple[list["Check"], "BrainRepair | None"]
"""A verification, and the log repair that ran first (None without ``--repair``)."""


def findings_json(found: list[Check]) -> dict[str, Any]:
    """``{"ok", "checks": [{"what", "ok", "detail"}]}``."""
    checks = [{"what": c.name, "ok": c.ok, "detail": c.detail} for c in found]
    return {"ok": all(c.ok for c in found), "checks": checks}


def findings_text(found: list[Check]) -> str:
    return "\n".join(f"{c.status.upper():4}  {c.name}: {c.detail}" for c in found)


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
