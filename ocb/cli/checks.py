"""The commands that check a brain: doctor (its health), replay (the projections against
a rebuild) and verify (the log and every snapshot; with --repair, mend the log first)."""

from __future__ import annotations

from typing import Annotated

import typer

from ocb.cli.options import AsOfOpt, BrainOpt, JsonOpt, handled, open_brain, out, runs, warn

group = typer.Typer()

HeadOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--head",
        metavar="SEQ:HEX",
        help="A head of the chain printed by an earlier verify and kept elsewhere: fail "
        "if the chain at SEQ is not HEX (the history was rewritten). Repeatable.",
    ),
]


@group.command()
@runs("read")
@handled
def doctor(
    brain: BrainOpt,
    repair: Annotated[
        bool, typer.Option("--repair", help="First regenerate lost vector blobs.")
    ] = False,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check the brain's health: log, projections, vectors, blobs, edges, tiers.

    \b
    Example:
      ocb doctor --brain /tmp/brain
      ocb doctor --brain /tmp/brain --repair
      ocb doctor --brain /tmp/brain --as-of 1200
    """
    from ocb.brain import Brain
    from ocb.cli.render.doctor import doctor_report_text
    from ocb.wire import doctor_json

    checks, fixed = Brain.doctor_at(brain, repair=repair, as_of=as_of)
    out((checks, fixed), as_json, doctor_report_text, doctor_json)
    if not all(c.ok for c in checks):
        raise typer.Exit(1)


@group.command()
@runs("exclusive")
@handled
def replay(
    brain: BrainOpt,
    verify: Annotated[bool, typer.Option("--verify", help="Compare with a full rebuild.")] = True,
    as_json: JsonOpt = False,
) -> None:
    """Rebuild every projection from the log and compare it with the live state.

    \b
    Example:
      ocb replay --brain /tmp/brain --verify
    """
    from ocb.cli.render.verify import findings_text
    from ocb.wire import findings_json

    with open_brain(brain, writer=False) as b:
        found = b.check_projections()
    out(found, as_json, findings_text, findings_json)
    if not all(f.ok for f in found):
        raise typer.Exit(1)


@group.command("verify")
@runs("read")
@handled
def verify_command(
    brain: BrainOpt,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="First keep every intact record and turn damaged, lost or tampered ones "
            "(that do not match their hash chain) into tombstones that keep their seq "
            "(recorded as a log_repaired event).",
        ),
    ] = False,
    rewrite: Annotated[
        bool,
        typer.Option(
            "--rewrite",
            help="First rewrite the log in the current storage format (compact records, "
            "full segments compressed): the records stay the same, their bytes and the "
            "hash chain change (recorded as a log_repaired event). The old log stays in "
            "place until the new one is verified.",
        ),
    ] = False,
    head: HeadOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check the log's framing, checksums, seqs and hash chain, and every snapshot
    against a rebuild; print the head of the chain (SEQ:HEX) to keep elsewhere. With
    --repair, repair a damaged log first; with --rewrite, rewrite an older log in the
    current format first.

    \b
    Example:
      ocb verify --brain /tmp/brain
      ocb verify --brain /tmp/brain --head 1200:0f3c9a41d2b8e7f6a5c4d3e2f1a0b9c8
      ocb verify --brain /tmp/brain --repair
      ocb verify --brain /tmp/brain --rewrite
    """
    from ocb.brain import Brain
    from ocb.cli.progress import ProgressBar
    from ocb.cli.render.verify import log_repair_text, log_rewrite_text, verify_text
    from ocb.wire import verify_json

    heads = Brain.parse_heads(head or [], repair=repair)
    fixed = None
    if repair:
        fixed = Brain.repair(brain, warn=warn)
        if not as_json:
            typer.echo(log_repair_text(fixed))  # before the checks, which may take a while
    if rewrite:
        done = Brain.rewrite(brain, warn=warn)
        if not as_json:
            typer.echo(log_rewrite_text(done))
    bar = ProgressBar()
    found = Brain.verify_at(
        brain, heads=heads, warn=warn, progress=lambda n, t: bar("verify", n, t)
    )
    bar.close()
    out((found, fixed), as_json, verify_text, verify_json)
    if not all(f.ok for f in found.checks):
        raise typer.Exit(1)
