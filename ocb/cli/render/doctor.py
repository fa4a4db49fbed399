"""Rendering ``ocb doctor`` and the blob repair it can run first: the stable JSON object
(documented in README.md) and the human text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ocb.cli.render.encode import plain

if TYPE_CHECKING:
    from ocb.upkeep.blobs import BlobReport
    from replay.verify import Check

Doctored = tuple[list["Check"], "BlobReport | None"]
"""A doctor run, and the blob repair that ran first (None without ``--repair``)."""


def doctor_json(got: Doctored) -> dict[str, Any]:
    """``{repair: {named, regenerated, lost}}`` after ``--repair``, then ``{ok, checks}``."""
    checks, fixed = got
    out: dict[str, Any] = {}
    if fixed is not None:
        out["repair"] = {
            "named": fixed.named,
            "regenerated": fixed.regenerated,
            "lost": plain(fixed.lost),
        }
    out["ok"] = all(c.ok for c in checks)
    out["checks"] = plain(checks)
    return out


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
