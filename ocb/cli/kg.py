"""The commands of the current facts: ``ocb kg set/get/history`` (a sub-app; JSON shapes in
``ocb.cli.render.kg``)."""

from __future__ import annotations

from typing import Annotated

import typer

from ocb.cli.options import AsOfOpt, BrainOpt, JsonOpt, handled, open_brain, out, runs

group = typer.Typer(
    help="Current facts (subject, predicate, value) with their sources and staleness.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

SubjectArg = Annotated[str, typer.Argument(help='What the fact is about, e.g. "Discord API".')]
PredicateArg = Annotated[str, typer.Argument(help="Which property, e.g. rate_limit.")]
PredicateOpt = Annotated[
    str | None, typer.Argument(help="Only this predicate (all of the subject's by default).")
]


@group.command("set", context_settings={"ignore_unknown_options": True})  # values like -5
@runs("write")
@handled
def kg_set(
    brain: BrainOpt,
    subject: SubjectArg,
    predicate: PredicateArg,
    value: Annotated[str, typer.Argument(help="The value now, in one line.")],
    source: Annotated[
        str, typer.Option(help="Where it was read: path#L12, path#L12-L20 or free text.")
    ] = "",
    as_json: JsonOpt = False,
) -> None:
    """State a fact's current value (the same value again re-verifies it).

    \b
    Example:
      ocb kg set "Discord API" rate_limit "100/min" --source memory/2026-11-20.md#L14 --brain B
      ocb kg set "Discord API" owner "Alice" --source "standup 2026-11-21" --brain B --json
    """
    from ocb.cli.render.kg import set_text
    from ocb.wire import set_json

    with open_brain(brain) as b:
        report = b.kg_set(subject, predicate, value, source)
    out(report, as_json, set_text, set_json)


@group.command("get")
@runs("read")
@handled
def kg_get(
    brain: BrainOpt,
    subject: SubjectArg,
    predicate: PredicateOpt = None,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show a subject's current facts: value, source, when last verified, a caveat when
    stale (memory.stale_days) and conflicting values from other sources.

    \b
    Example:
      ocb kg get "Discord API" --brain B
      ocb kg get "discord api" rate_limit --brain B --as-of 2026-11-21T09:00 --json
    """
    from ocb.cli.render.kg import get_text
    from ocb.wire import get_json

    with open_brain(brain, writer=False, as_of=as_of) as b:
        view = b.kg_get(subject, predicate)
    out(view, as_json, get_text, get_json)


@group.command("history")
@runs("read")
@handled
def kg_history(
    brain: BrainOpt,
    subject: SubjectArg,
    predicate: PredicateOpt = None,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List every statement of a subject's facts, oldest first, with source and seq.

    \b
    Example:
      ocb kg history "Discord API" --brain B
      ocb kg history "Discord API" rate_limit --brain B --json
    """
    from ocb.cli.render.kg import history_text
    from ocb.wire import history_json

    with open_brain(brain, writer=False, as_of=as_of) as b:
        got = b.kg_history(subject, predicate)
    out(got, as_json, history_text, history_json)
