"""Rendering ``ocb retract`` as text (the JSON object is ``ocb.wire``'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocb.graph.retract import RetractReport
    from ocb.memory.unretain import FactRetraction


def retract_text(r: RetractReport) -> str:
    verb = "retracted" if r.recorded else "would retract (dry run, nothing recorded)"
    head = f"{verb} the {r.detail} (seq {r.target_seq})"
    if r.recorded:
        head += f" at seq {r.seq}"
    if r.removed_node:
        lines = [f"{head}: removed {r.removed_node} and its {len(r.removed)} edge(s)"]
        lines += [f"  {m.before:+.3f}  {m.source} -> {m.target}" for m in r.removed]
        return "\n".join(lines)
    n, b = len(r.weights), len(r.baselines)
    lines = [f"{head}: {n} weight(s) reversed, {b} baseline(s) restored"]
    if r.credits:
        lines[0] += f", {len(r.credits)} route credit(s) moved back"
    lines += [f"  {m.before:.3f} -> {m.after:.3f}  {m.source} -> {m.target}" for m in r.weights]
    lines += [f"  {m.before:.3f} -> {m.after:.3f}  baseline of {m.source}" for m in r.baselines]
    lines += [
        f"  {m.before:.3f} -> {m.after:.3f}  relevance of {m.source} -> {m.target}"
        for m in r.relevance
    ]
    lines += [
        f"  {m.before:+.3f} -> {m.after:+.3f}  {m.target} on route {m.source}" for m in r.credits
    ]
    lines += [f"  skipped {s}" for s in r.skipped]
    return "\n".join(lines)


def fact_text(r: FactRetraction) -> str:
    verb = "removed" if r.written else "would remove (dry run)"
    said = " (a claim by an assistant)" if r.speaker == "assistant" else ""
    return f"{verb} fact {r.fact_id}{said} from {r.source}:\n  {r.removed}"
