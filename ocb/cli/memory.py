"""The commands of the typed memory: retain and recall (rendered by
``ocb.cli.render.memory``)."""

from __future__ import annotations

import functools
from typing import Annotated

import typer

from ocb.cli.options import AsOfOpt, BrainOpt, JsonOpt, handled, open_brain, out, runs

group = typer.Typer()


@group.command()
@runs("write")
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
        float | None, typer.Option(help="Confidence of an opinion or a claim, 0..1.")
    ] = None,
    speaker: Annotated[
        str, typer.Option(help="Who said it: user, assistant (a claim) or tool.")
    ] = "user",
    session: Annotated[str, typer.Option(help="The conversation it was said in.")] = "",
    turn: Annotated[int, typer.Option(help="The turn of that conversation.")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """Write a fact into today's daily log (## Retain) and record it.

    What an assistant said (--speaker assistant) is a claim: it ranks below the
    workspace's evidence until an outcome or a fact of the user confirms it.

    \b
    Example:
      ocb retain "Sarah is leaving the company next month" --type B --entity Sarah --brain B
      ocb retain "Peter prefers written updates" --type O --confidence 0.8 -e Peter --brain B
      ocb retain "the deploy failed on a rate limit" -t B --speaker assistant --turn 3 --brain B
    """
    from ocb.cli.render.memory import retain_text
    from ocb.wire import retain_json

    with open_brain(brain) as b:
        report = b.retain(
            content, kind=kind, entities=entity or [], salience=salience, confidence=confidence,
            speaker=speaker, session=session, turn=turn,
        )  # fmt: skip
    out(report, as_json, retain_text, retain_json)


@group.command()
@runs("write")
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
    from ocb.cli.render.memory import recall_text
    from ocb.wire import recall_json

    with open_brain(brain, as_of=as_of) as b:
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
    out(answer, as_json, functools.partial(recall_text, explain=explain), recall_json)
