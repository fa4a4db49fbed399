"""Rendering ``ocb warm`` as a human summary (the JSON object is ``ocb.wire``'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocb.graph.warm import WarmReport

_SHOWN = 20  # skipped lines listed in the text; --json lists them all


def warm_text(r: WarmReport) -> str:
    known = sum(t.known for t in r.transcripts)
    waiting = sum(t.pending for t in r.transcripts)
    lines = [
        f"read {len(r.transcripts)} transcript(s): {r.turns} answered turn(s), "
        f"{known} warmed before, {waiting} awaiting an answer"
    ]
    verb = "would record" if r.dry_run else "recorded"
    where = f" (seq {r.first_seq}-{r.last_seq})" if r.last_seq else ""
    lines.append(
        f"{verb} {r.queries} quer{'y' if r.queries == 1 else 'ies'}{where}; outcomes: "
        f"{r.used} positive (used), {r.corrected + r.missed} negative ({r.corrected} "
        f"corrected, {r.missed} missed), {r.unscored} without evidence"
    )
    if r.candidates:
        done = (
            f"{verb} {r.corrections} as CORRECTION nodes"
            if r.with_corrections
            else "not recorded (pass --corrections)"
        )
        lines.append(f"corrections: {r.candidates} candidate(s), {done}")
    skipped = [(t.path, n, why) for t in r.transcripts for n, why in t.skipped]
    lines += [f"skipped {p} line {n}: {why}" for p, n, why in skipped[:_SHOWN]]
    if len(skipped) > _SHOWN:
        lines.append(f"... and {len(skipped) - _SHOWN} more skipped line(s) (see --json)")
    return "\n".join(lines)
