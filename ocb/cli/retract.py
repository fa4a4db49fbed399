"""The ``retract`` command (rendered by ``ocb.cli.render.retract``)."""

from __future__ import annotations

from typing import Annotated

import typer

from ocb.cli.options import BrainOpt, JsonOpt, handled, open_brain, out, runs

group = typer.Typer()


@group.command()
@runs("write", dry_run_reads=True)
@handled
def retract(
    brain: BrainOpt,
    seq: Annotated[
        int | None, typer.Option(help="Seq of an outcome, teacher label or injection.")
    ] = None,
    node: Annotated[str, typer.Option(help="An injected node (e.g. correction::1).")] = "",
    trace: Annotated[str, typer.Option(help="The newest outcome of this trace.")] = "",
    chat_id: Annotated[str, typer.Option(help="The newest outcome of this chat.")] = "",
    source: Annotated[
        str, typer.Option(help="With --trace/--chat-id: only outcomes from this source.")
    ] = "",
    fact: Annotated[
        str, typer.Option(help="A fact (e.g. a claim an assistant made): its bullet goes.")
    ] = "",
    reason: Annotated[str, typer.Option(help="Why, kept with the retraction.")] = "",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print, record nothing.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Take back an outcome, a teacher label, an injection or a fact (all stay in the history).

    An outcome or label: the weight changes it made are reversed (weights nothing else
    moved since return to what they were; later changes stay) and the reward baselines
    it moved are restored. An injection: the node and its edges go, and what it vetoed
    fires again. A fact: its bullet is removed from its file and the fact retired. A
    retraction cannot itself be retracted: record the outcome again.

    \b
    Example:
      ocb retract --brain /tmp/brain --chat-id c1 --reason "wrong chat"
      ocb retract --brain /tmp/brain --node correction::1 --dry-run
      ocb retract --brain /tmp/brain --fact f12
      ocb retract --brain /tmp/brain --seq 1234 --json
    """
    from ocb.cli.render.retract import fact_text, retract_text
    from ocb.wire import fact_json, retract_json

    if fact:
        with open_brain(brain, writer=not dry_run) as b:
            done = b.retract_fact(fact, dry_run=dry_run)
        return out(done, as_json, fact_text, fact_json)
    with open_brain(brain, writer=not dry_run) as b:
        report = b.retract(
            seq=seq,
            node_id=node,
            trace_id=trace,
            chat_id=chat_id,
            source=source,
            reason=reason,
            dry_run=dry_run,
        )
    out(report, as_json, retract_text, retract_json)
