"""What every command shares: the ``--brain``, ``--json`` and ``--as-of`` options, the
wrapper that maps an ``OcbError`` to exit code 1, and the output helpers.

NOTE: every command module imports this one at startup; keep its imports light (the
renderers are imported when a command prints).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import typer

from ocb.daemon.served import SERVED

if TYPE_CHECKING:
    from ocb.brain import Brain
    from ocb.reports import SyncReport

F = TypeVar("F", bound=Callable[..., Any])
Progress = Callable[[str, int, int], None]

BrainOpt = Annotated[
    Path, typer.Option("--brain", envvar="OCB_BRAIN", help="Brain directory (or $OCB_BRAIN).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print a stable JSON object on stdout.")]
AsOfOpt = Annotated[
    str | None,
    typer.Option(help="Read the brain as it was at a seq or ISO time (records nothing)."),
]


Runs = Literal["read", "write", "history", "exclusive", "local"]
"""How the daemon runs a command (``ocb.daemon.methods.Kind``): beside the writer
(``read``), on the writer thread (``write``), alone (``exclusive``: it replaces what
the daemon holds), outside the gate over the history (``history``), or never
(``local``: it runs only in its own process)."""


def runs(kind: Runs, *, dry_run_reads: bool = False) -> Callable[[F], F]:
    """Mark a command with how the daemon runs it (every command has a mark: a test
    says which lacks one). With ``dry_run_reads``, ``--dry-run`` makes it a read.
    Whatever the mark, ``--help`` and ``--as-of`` make a command a read (but for an
    exclusive one, and for one over the history, which keeps its kind with ``--as-of``).
    """

    def mark(fn: F) -> F:
        fn.ocb_runs = (kind, dry_run_reads)  # type: ignore[attr-defined]
        return fn

    return mark


def _served(path: Path) -> Brain | None:
    served = SERVED.get()
    if served is None:
        return None
    try:
        same = served.path.resolve() == path.resolve()
    except OSError:
        return None
    return served if same else None


@contextmanager
def open_brain(
    path: Path, *, writer: bool = True, as_of: str | None = None, **options: Any
) -> Iterator[Brain]:
    """The brain at ``path`` for one command: the daemon's own when the command runs
    inside the daemon that serves it (left open), else opened here and closed after.
    A view of the past (``as_of``) is always opened on its own."""
    served = _served(path) if as_of is None else None
    if served is not None:
        yield served
        return
    from ocb.brain import Brain

    with Brain(path, writer=writer, as_of=as_of, warn=warn, **options) as b:
        yield b


def init_brain(
    path: Path,
    workspace: Path,
    progress: Progress,
    embedder: str | None = None,
    log: str | None = None,
) -> SyncReport:
    """Create or sync the brain at ``path`` with ``workspace`` (the served brain syncs),
    its vectors made by the embedder ``embedder`` names (a new brain's; an existing
    brain's must be the one it was built with), its log on PostgreSQL at ``log``."""
    served = _served(path)
    if served is not None:
        _same_embedder(served, embedder)
        return served.sync(workspace, progress=progress)
    from ocb.brain import Brain

    if log is not None:
        Brain.attach_log(path, log, workspace)

    opts: dict[str, Any] = {"embedder": embedder} if embedder else {}
    b, report = Brain.init(path, workspace, progress=progress, warn=warn, **opts)
    b.close()
    return report


def _same_embedder(served: Brain, spec: str | None) -> None:
    """Refuse an embedder other than the one the served brain's vectors were built with.

    Raises:
        EmbedderMismatch: ``spec`` names another embedder.
    """
    from ocb_events.errors import EmbedderMismatch

    vec = served.state("vectors")
    recorded = vec.spec or "hash"
    if spec and spec.strip() != recorded:
        fix = f"ocb reembed --embedder {spec.strip()} --brain {served.path}"
        raise EmbedderMismatch(vec.embedder_id or recorded, spec.strip(), fix)


def handled(fn: F) -> F:
    """Map every OcbError of a command to exit code 1 with an error and a hint line."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # Imported here: the event package loads the whole log stack, which ``--help`` and
        # usage errors never need.
        from ocb.cli.flags import rendered
        from ocb_events.errors import OcbError

        try:
            return fn(*args, **kwargs)
        except OcbError as exc:
            message, hint = rendered(exc, *_explained(exc), fn.__name__.replace("_", "-"))
            typer.echo(f"error: {message}", err=True)
            if hint:
                typer.echo(f"hint: {hint}", err=True)
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


def _explained(exc: Any) -> tuple[str, str]:
    """An error's message and hint; a lock held by the daemon serving the brain (a
    command run with --no-daemon beside it) says so and how to go through it."""
    from ocb.daemon.protocol import RpcError, call, connect
    from ocb_events.errors import BrainLocked

    if not isinstance(exc, BrainLocked) or exc.pid is None:
        return exc.message, exc.hint
    sock = connect(exc.path, timeout=5.0)
    if sock is None:
        return exc.message, exc.hint
    try:
        with sock:
            pid = call(sock, "hello").get("pid")
    except (RpcError, OSError, AttributeError):
        return exc.message, exc.hint
    if pid != exc.pid:
        return exc.message, exc.hint
    return (
        f"brain {exc.path} is served by its daemon (pid {pid}), which holds its lock",
        f"go through the daemon (leave out --no-daemon), or stop it first: "
        f"ocb serve stop --brain {exc.path}",
    )


def warn(msg: str) -> None:
    """A ``warning:`` line on stderr."""
    typer.echo(f"warning: {msg}", err=True)


def note(msg: str) -> None:
    """A diagnostic line on stderr."""
    typer.echo(msg, err=True)


def out(obj: Any, as_json: bool, text: Callable[[Any], str], to_json: Callable[[Any], Any]) -> None:
    """Print ``obj`` on stdout: ``to_json(obj)`` as one JSON object, or ``text(obj)``."""
    from ocb.wire import dumps

    typer.echo(dumps(to_json(obj)) if as_json else text(obj))
