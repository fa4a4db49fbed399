"""CLI commands of the typed memory: retain and recall (registered on ``ocb.cli.app.app``),
and their renderers (the JSON shapes are documented in README.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ocb.cli.app import AsOfOpt, BrainOpt, JsonOpt, _out, _warn, app, handled

if TYPE_CHECKING:
    from ocb.memory.recall import RecallItem
    from ocb.memory.retain import RecallAnswer, RetainReport


@app.command()
@handled
def retain(
    brain: BrainOpt,
    content: Annotated[str, typer.Argument(help="The fact, in one line.")],
    kind: Annotated[
        str, typer.Option("--type", "-t", help="W world, B experience, O opinion, S summary.")
    ] = "W",
    entity: Annotated[
        list[str] | None, typer.Option("--entity", "-e", help="An entity it is about (repeat).")
    ] = None,
    salience: Annotated[
        float | None, typer.Option(help="How much it matters, 0..1 (estimated when left out).")
    ] = None,
    confidence: Annotated[
        float | None, typer.Option(help="Confidence of an opinion, 0..1.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a fact into today's daily log (## Retain) and record it.

    \b
    Example:
      ocb retain "Sarah is leaving the company next month" --type B --entity Sarah --brain B
      ocb retain "Peter prefers written updates" --type O --confidence 0.8 -e Peter --brain B
    """
    from ocb.brain import Brain

    with Brain(brain, warn=_warn) as b:
        report = b.retain(
            content, kind=kind, entities=entity or [], salience=salience, confidence=confidence
        )
    _out(report, as_json, retain_text, retain_json)


@app.command()
@handled
def recall(
    brain: BrainOpt,
    query: Annotated[str, typer.Argument(help="The question (may say 'around Nov 27').")] = "",
    k: Annotated[int, typer.Option("--k", help="Number of results.")] = 10,
    since: Annotated[
        str | None, typer.Option(help="Only facts since: 30d, 2w, 12h or a date.")
    ] = None,
    between: Annotated[
        tuple[str, str] | None, typer.Option(help="Only facts from day A to day B (inclusive).")
    ] = None,
    kind: Annotated[list[str] | None, typer.Option(help="Only facts of a kind (repeat).")] = None,
    entity: Annotated[
        list[str] | None, typer.Option("--entity", "-e", help="Only facts about it (repeat).")
    ] = None,
    min_salience: Annotated[float, typer.Option(help="Only facts at least this salient.")] = 0.0,
    associative_depth: Annotated[
        int, typer.Option(help="Hops of activation over co-occurring entities.")
    ] = 0,
    max_chars: Annotated[
        int | None, typer.Option(help="Budget of the bundle (default memory.max_chars).")
    ] = None,
    explain: Annotated[bool, typer.Option(help="Show score parts and entity paths.")] = False,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Recall typed facts by question, entity, time and kind, with their sources.

    \b
    Example:
      ocb recall "app performance" --brain B --since 30d --associative-depth 2 --explain
      ocb recall --entity Peter --kind O --brain B
      ocb recall "deploy" --between 2026-11-20 2026-11-27 --brain B --json
    """
    from ocb.brain import Brain

    with Brain(brain, warn=_warn, as_of=as_of) as b:
        answer = b.recall(
            query,
            k=k,
            since=since,
            between=between,
            kinds=kind or [],
            entities=entity or [],
            min_salience=min_salience,
            depth=associative_depth,
            max_chars=max_chars,
        )
    _out(answer, as_json, lambda a: recall_text(a, explain), recall_json)


# --------------------------------------------------------------------------- render


def retain_text(r: RetainReport) -> str:
    if not r.created:
        return f"already known: {r.fact_id} at {r.source} (nothing recorded)"
    return f"retained {r.fact_id} at {r.source}\n  {r.bullet}"


def retain_json(r: RetainReport) -> dict[str, Any]:
    return {
        "id": r.fact_id,
        "source": r.source,
        "created": r.created,
        "path": r.path,
        "bullet": r.bullet,
    }


def item_json(it: RecallItem) -> dict[str, Any]:
    """One result: the retrieval contract (id, source, text, score) and the fact's
    kind, day, entities, score parts, entity path and (opinions) confidence."""
    out: dict[str, Any] = {
        "id": it.id,
        "source": it.source,
        "text": it.text,
        "score": it.score,
        "kind": it.kind,
        "day": it.day,
        "entities": list(it.entities),
        "parts": {"match": it.match, "salience": it.salience, "access": it.access},
        "via": list(it.via),
    }
    if it.confidence is not None:
        out["confidence"] = it.confidence
    if it.evidence:
        out["evidence"] = list(it.evidence)
    return out


def recall_json(a: RecallAnswer) -> dict[str, Any]:
    return {
        "trace_id": a.trace_id,
        "query": a.query,
        "date_phrase": a.date_phrase,
        "results": [item_json(it) for it in a.results],
        "context_chars": a.context_chars,
        "dropped": a.dropped,
    }


def _line(n: int, it: RecallItem, explain: bool, w: tuple[float, float, float]) -> list[str]:
    ents = " ".join("@" + e for e in it.entities)
    conf = f" c={it.confidence:.2f}" if it.confidence is not None else ""
    lines = [f"{n:>2}. [{it.kind}{conf}] {it.day} {it.source}  {it.score:.3f}", f"    {it.text}"]
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
