"""The ``ocb`` command line: the app, built from the command groups, and its entry point.

Exit codes: 0 success; 1 a user error (``error:`` and ``hint:`` lines on stderr, no
traceback, nothing recorded); 2 a usage error. Heavy modules are imported inside the
commands so that ``ocb --help`` starts fast.
"""

from __future__ import annotations

import os

import typer
from typer.main import get_command_name
from typer.models import CommandInfo

from ocb.cli.checks import group as checks
from ocb.cli.compact import group as compaction
from ocb.cli.core import group as core
from ocb.cli.history import audit, group as history
from ocb.cli.kg import group as kg
from ocb.cli.logs import group as logs
from ocb.cli.mcp import group as mcp
from ocb.cli.memory import group as memory
from ocb.cli.reflect import group as reflect
from ocb.cli.retract import group as retract
from ocb.cli.serve import group as live, serve
from ocb.cli.ui import group as window
from ocb.cli.upkeep import group as upkeep
from ocb.cli.warm import group as warming
from ocb.cli.whatif import group as whatif

GROUPS = (
    core,
    upkeep,
    checks,
    history,
    memory,
    reflect,
    compaction,
    retract,
    whatif,
    live,
    mcp,
    warming,
    window,
)
"""Every group of top-level commands; their commands are listed flat."""

ORDER = (
    "init",
    "query",
    "learn",
    "inject",
    "doctor",
    "events",
    "config",
    "demo",
    "maintain",
    "anchor",
    "teach",
    "warm",
    "train-route",
    "health",
    "reembed",
    "snapshot",
    "replay",
    "verify",
    "forget",
    "sql",
    "report",
    "export",
    "retain",
    "recall",
    "reflect",
    "compact",
    "show",
    "retract",
    "diff",
    "what-if",
    "watch",
    "mcp",
    "ui",
)
"""The top-level commands in the order ``ocb --help`` lists them (the sub-apps follow)."""


def _name(command: CommandInfo) -> str:
    if command.name:
        return command.name
    assert command.callback is not None
    return get_command_name(command.callback.__name__)


def build() -> typer.Typer:
    """The ``ocb`` app: every group's commands at the top level, in ``ORDER``, then the
    ``audit``, ``kg``, ``log`` and ``serve`` sub-apps."""
    app = typer.Typer(
        help="OpenClawBrain: a learning memory graph over a Markdown workspace. "
        "A command is answered by the daemon serving its brain (ocb serve) when one "
        "runs; --no-daemon (or OCB_NO_DAEMON=1) runs it in this process.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    found = [c for group in GROUPS for c in group.registered_commands]
    commands = {_name(c): c for c in found}
    if len(found) != len(ORDER) or sorted(commands) != sorted(ORDER):
        raise RuntimeError(f"the groups' commands {sorted(commands)} are not ORDER's")
    app.registered_commands.extend(commands[name] for name in ORDER)
    app.add_typer(audit, name="audit")
    app.add_typer(kg, name="kg")
    app.add_typer(logs, name="log")
    app.add_typer(serve, name="serve")
    return app


app = build()


def main() -> None:
    """Entry point of the ``ocb`` script."""
    # Vectors are searched with one matrix-vector product per query: a thread pool only
    # adds contention (10-20x slower on a busy 2-core machine). Set before numpy loads.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    app()


if __name__ == "__main__":
    main()
