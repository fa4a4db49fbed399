"""The commands comparing points in the brain's history: diff and what-if (rendered by
``ocb.cli.render.whatif``)."""

from __future__ import annotations

from typing import Annotated

import typer

from ocb.cli.options import BrainOpt, JsonOpt, handled, open_brain, out, runs

group = typer.Typer()

ThresholdOpt = Annotated[
    float, typer.Option(help="Count a weight as changed when it moved by more than this.")
]
TopOpt = Annotated[int, typer.Option(help="How many of the largest changes to list.")]


@group.command("diff")
@runs("read")
@handled
def diff_command(
    brain: BrainOpt,
    start: Annotated[str, typer.Option("--from", help="Earlier point: a seq or an ISO time.")],
    end: Annotated[
        str | None, typer.Option("--to", help="Later point (default: the last seq).")
    ] = None,
    threshold: ThresholdOpt = 0.0,
    top: TopOpt = 20,
    as_json: JsonOpt = False,
) -> None:
    """Compare the graph at two points: nodes, edge weights, tier transitions.

    \b
    Example:
      ocb diff --brain /tmp/brain --from 1000 --to 2000 --threshold 0.05
      ocb diff --brain /tmp/brain --from 2026-11-03T10:00 --top 10 --json
    """
    from ocb.cli.render.whatif import diff_text
    from ocb.wire import diff_json

    with open_brain(brain, writer=False) as b:
        report = b.diff(start, end, threshold=threshold, top=top)
    out(report, as_json, diff_text, diff_json)


@group.command("what-if")
@runs("read")
@handled
def what_if_command(
    brain: BrainOpt,
    start: Annotated[
        str, typer.Option("--from", help="Re-decide after this seq or ISO time (0: all).")
    ] = "0",
    rule: Annotated[str | None, typer.Option(help="Learning rule: pg or heuristic.")] = None,
    eta: Annotated[float | None, typer.Option(help="Learning rate.")] = None,
    gamma: Annotated[float | None, typer.Option(help="Discount over a trajectory.")] = None,
    baseline_rate: Annotated[
        float | None, typer.Option(help="Rate of the per-node reward baselines.")
    ] = None,
    threshold: ThresholdOpt = 0.0,
    top: TopOpt = 20,
    queries: Annotated[int, typer.Option(help="Recorded queries to re-run on both.")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Replay the learning with other settings in a scratch brain and compare.

    The real brain is never changed. Options not given keep the recorded settings.

    \b
    Example:
      ocb what-if --brain /tmp/brain --rule heuristic --eta 0.05 --from 0
      ocb what-if --brain /tmp/brain --from 1200 --gamma 0.5 --json
    """
    from ocb.cli.progress import ProgressBar
    from ocb.cli.render.whatif import what_if_text
    from ocb.wire import what_if_json

    bar = ProgressBar()
    with open_brain(brain, writer=False) as b:
        report = b.what_if(
            start,
            threshold=threshold,
            top=top,
            queries=queries,
            progress=bar,
            rule=rule,
            eta=eta,
            gamma=gamma,
            baseline_rate=baseline_rate,
        )
    bar.close()
    out(report, as_json, what_if_text, what_if_json)
