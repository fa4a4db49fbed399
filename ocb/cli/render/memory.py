"""Rendering the typed memory (``retain``, ``recall``, ``reflect``) as text (the JSON
objects, and their shapes, are ``ocb.wire``'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocb.memory.recall import RecallItem
    from ocb.memory.recall_service import RecallAnswer
    from ocb.memory.reflect import ReflectItem, ReflectReport
    from ocb.memory.retain import RetainReport


def retain_text(r: RetainReport) -> str:
    if not r.created:
        return f"already known: {r.fact_id} at {r.source} (nothing recorded)"
    text = f"retained {r.fact_id} at {r.source}\n  {r.bullet}"
    if r.confirmed:
        text += f"\n  confirms the claim(s) {', '.join(r.confirmed)}"
    return text


def _line(n: int, it: RecallItem, explain: bool, w: tuple[float, float, float]) -> list[str]:
    ents = " ".join("@" + e for e in it.entities)
    conf = f" c={it.confidence:.2f}" if it.confidence is not None else ""
    said = f" claim by {it.speaker}" if it.claim else ""
    head = f"{n:>2}. [{it.kind}{conf}{said}] {it.day} {it.source}  {it.score:.3f}"
    lines = [head, f"    {it.text}"]
    if ents:
        lines[-1] += f"  ({ents})"
    if it.evidence:
        lines.append("    evidence: " + ", ".join(it.evidence))
    if explain:
        lines.append(
            f"    score = {w[0]:g}*match {it.match:.3f} + {w[1]:g}*salience {it.salience:.3f}"
            f" + {w[2]:g}*access {it.access:.3f}"
        )
        if it.via:
            lines.append("    via " + " -> ".join("@" + e for e in it.via))
    return lines


def recall_text(a: RecallAnswer, explain: bool = False) -> str:
    if not a.results:
        return "no facts match (try fewer filters, or a wider --since)"
    out: list[str] = []
    for n, it in enumerate(a.results, 1):
        out += _line(n, it, explain, a.weights)
    tail = f"{len(a.results)} fact(s), {a.context_chars} chars"
    if a.dropped:
        tail += f"; {a.dropped} more left out by the budget (raise --max-chars)"
    if a.date_phrase:
        tail += f"; read '{a.date_phrase}' as a date window"
    if a.trace_id:
        tail += f"; trace {a.trace_id}"
    return "\n".join([*out, tail])


def _item_text(x: ReflectItem) -> list[str]:
    if x.change == "opinion_confidence":
        lines = [f"  {x.path}: opinion {x.subject} confidence {x.before} -> {x.after}"]
        sup = ", ".join(x.supporting) or "none"
        con = ", ".join(x.contradicting) or "none"
        lines.append(f"    supporting: {sup}; contradicting: {con}")
        lines.append(f"    evidence: {', '.join(x.sources)}")
        return lines
    return [
        f"  {x.path}: summary of {x.subject}",
        f"    before: {x.before.splitlines()[0] if x.before else '(none)'}",
        f"    after: {x.after.splitlines()[0]}",
        f"    sources: {', '.join(x.sources)}",
    ]


def reflect_text(r: ReflectReport) -> str:
    head = f"{len(r.priority)} priority fact(s) since {r.since}"
    if not r.changes:
        return f"nothing to reflect: {head}; nothing written or recorded"
    lines = [f"reflected on {head}: {len(r.changes)} change(s), recorded at seq {r.seq}"]
    for x in r.changes:
        lines += _item_text(x)
    lines.append("wrote " + ", ".join(r.written))
    return "\n".join(lines)
