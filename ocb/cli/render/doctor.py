"""Rendering ``ocb doctor`` and the blob repair it can run first as text (the JSON
object is ``ocb.wire``'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocb.upkeep.blobs import BlobReport
    from ocb.wire.answers import Doctored
    from replay.verify import Check


def doctor_text(checks: list[Check]) -> str:
    return "\n".join(f"{c.status.upper():4}  {c.name}: {c.detail}" for c in checks)


def doctor_report_text(got: Doctored) -> str:
    """The blob repair (after ``--repair``), then one line per check."""
    checks, fixed = got
    return ("" if fixed is None else blobs_text(fixed) + "\n") + doctor_text(checks)


def blobs_text(r: BlobReport) -> str:
    if not r.lost:
        return f"repair: no lost blobs ({r.named} named by the log)"
    lines = [f"repair: {r.regenerated} of {len(r.lost)} lost blob(s) regenerated"]
    for b in r.lost:
        lines.append(f"  {b.status:14} {b.blob[:12]} ({b.kind}, seq {b.seq}): {b.detail}")
    return "\n".join(lines)
