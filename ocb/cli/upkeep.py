"""The upkeep commands: maintain, anchor, teach, train-route, health and reembed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ocb.cli.options import AsOfOpt, BrainOpt, JsonOpt, handled, open_brain, out, runs

group = typer.Typer()


@group.command()
@runs("write", dry_run_reads=True)
@handled
def maintain(
    brain: BrainOpt,
    ops: Annotated[
        str,
        typer.Option(
            help="Comma-separated ops (default all): merge,split,decay,connect,scale,prune."
        ),
    ] = "",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan only.")] = False,
    half_life_days: Annotated[float | None, typer.Option(help="Decay half-life in days.")] = None,
    prune_below: Annotated[
        float | None, typer.Option(help="Remove edges whose |weight| is below.")
    ] = None,
    budget: Annotated[
        float | None, typer.Option(help="Cap on a node's positive out-weights.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Maintain the graph (decay, prune, merge, split, connect, scale) as events.

    \b
    Example:
      ocb maintain --brain /tmp/brain --ops decay,prune --dry-run
      ocb maintain --brain /tmp/brain --half-life-days 14 --json
    """
    from ocb.cli.render.upkeep import maintenance_text
    from ocb.wire import maintenance_json

    with open_brain(brain, writer=not dry_run) as b:
        report = b.maintain(
            ops,
            dry_run=dry_run,
            half_life_days=half_life_days,
            prune_below=prune_below,
            budget=budget,
        )
    out(report, as_json, maintenance_text, maintenance_json)


@group.command()
@runs("write")
@handled
def anchor(
    brain: BrainOpt,
    authority: Annotated[str, typer.Option(help="constitutional, canonical or overlay.")],
    node: Annotated[list[str] | None, typer.Option(help="Node id (repeatable).")] = None,
    file: Annotated[str, typer.Option(help="Workspace file: all its chunks.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Set the authority of nodes or of a whole file (constitutional never decays).

    \b
    Example:
      ocb anchor --brain /tmp/brain --file runbooks/deploy.md --authority constitutional
      ocb anchor --brain /tmp/brain --node notes/team.md::0 --authority canonical
    """
    from ocb.cli.render.upkeep import anchor_text
    from ocb.wire import anchor_json

    with open_brain(brain) as b:
        report = b.anchor(authority, node_ids=node or [], path=file)
    out(report, as_json, anchor_text, anchor_json)


@group.command()
@runs("write")
@handled
def teach(
    brain: BrainOpt,
    labels: Annotated[Path, typer.Option(help="JSON lines of teacher labels.")],
    apply: Annotated[bool, typer.Option("--apply", help="Record (default: dry run).")] = False,
    relevance: Annotated[bool, typer.Option(help="Also store scores as relevance.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Turn teacher labels on recorded decisions into policy-gradient updates.

    \b
    Example:
      ocb teach --brain /tmp/brain --labels labels.jsonl            # prints the deltas
      ocb teach --brain /tmp/brain --labels labels.jsonl --apply --relevance
    """
    from ocb.cli.render.upkeep import teach_text
    from ocb.wire import teach_json

    with open_brain(brain, writer=apply) as b:
        report = b.teach(labels, apply=apply, relevance=relevance)
    out(report, as_json, teach_text, teach_json)


@group.command("train-route")
@runs("write")
@handled
def train_route(
    brain: BrainOpt,
    min_examples: Annotated[int, typer.Option(help="Fewest labelled decisions.")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """Train the route model from recorded outcomes and labels (for --mode learned).

    \b
    Example:
      ocb train-route --brain /tmp/brain
      ocb query "how do I roll back" --brain /tmp/brain --mode learned
    """
    from ocb.cli.render.upkeep import train_text
    from ocb.wire import train_json

    with open_brain(brain) as b:
        report = b.train_route(min_examples=min_examples)
    out(report, as_json, train_text, train_json)


@group.command()
@runs("write")
@handled
def health(
    brain: BrainOpt,
    window: Annotated[int, typer.Option(help="Recent traces to average over.")] = 100,
    apply: Annotated[bool, typer.Option("--apply", help="Record the proposals.")] = False,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Report tier shares and query costs; propose (and --apply) setting fixes.

    \b
    Example:
      ocb health --brain /tmp/brain
      ocb health --brain /tmp/brain --apply
      ocb health --brain /tmp/brain --as-of 2026-11-03T10:00
    """
    from ocb.cli.render.upkeep import health_text
    from ocb.wire import health_json

    with open_brain(brain, writer=apply, as_of=as_of) as b:
        report, recs = b.health(window=window, apply=apply)
    out((report, recs), as_json, health_text, health_json)


@group.command()
@runs("exclusive")
@handled
def reembed(
    brain: BrainOpt,
    embedder: Annotated[
        str,
        typer.Option(help="The embedder to switch to: hash, minilm or http:<url>?model=<name>."),
    ],
    as_json: JsonOpt = False,
) -> None:
    """Make every vector of the brain again with another embedder and record the
    switch in one append (nothing is recorded if the embedder fails).

    \b
    Example:
      ocb reembed --embedder minilm --brain /tmp/brain
      ocb reembed --embedder hash --brain /tmp/brain --json
    """
    from ocb.cli.progress import ProgressBar
    from ocb.cli.render.upkeep import reembed_text
    from ocb.wire import reembed_json

    bar = ProgressBar()
    with open_brain(brain) as b:
        report = b.reembed(embedder, progress=bar)
    bar.close()
    out(report, as_json, reembed_text, reembed_json)
