"""The ``serve`` sub-app: run a daemon for a brain (foreground, detached or on stdio),
ask it for its status, and stop it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ocb.cli.options import JsonOpt, handled, out, runs

group = typer.Typer()
"""The ``watch`` command (top level)."""

serve = typer.Typer(
    help="Hold a brain open in a daemon that serves every client and watches the workspace.",
    rich_markup_mode=None,
)

MaybeBrain = Annotated[
    Path | None,
    typer.Option("--brain", envvar="OCB_BRAIN", help="Brain directory (or $OCB_BRAIN)."),
]


def need_brain(brain: Path | None) -> Path:
    from ocb_events.errors import InputError

    if brain is None:
        raise InputError("no brain given", "pass --brain DIR or set OCB_BRAIN")
    return brain.absolute()


@serve.callback(invoke_without_command=True)
@runs("local")
@handled
def run(
    ctx: typer.Context,
    brain: MaybeBrain = None,
    workspace: Annotated[
        Path | None, typer.Option(help="Workspace to watch (default: the brain's own).")
    ] = None,
    detach: Annotated[bool, typer.Option("--detach", help="Run in the background.")] = False,
    stdio: Annotated[
        bool, typer.Option("--stdio", help="Serve JSON-RPC on stdin/stdout instead of a socket.")
    ] = False,
    debounce: Annotated[int, typer.Option(help="Quiet time before a sync, in ms.")] = 300,
    timeout: Annotated[float, typer.Option(help="Seconds a request may take.")] = 60.0,
    idle_timeout: Annotated[
        float, typer.Option(help="Seconds a connection may wait between requests.")
    ] = 300.0,
) -> None:
    """Serve a brain: its only writer, every projection hot, the workspace watched.

    Clients (the ocb command itself, scripts, the MCP server) talk JSON-RPC 2.0 over
    BRAIN/run/ocb.sock (0600); the log goes to BRAIN/run/daemon.log. Stop it with
    Ctrl-C, SIGTERM or `ocb serve stop`.

    \b
    Example:
      ocb serve --brain /tmp/brain --workspace examples/workspace --detach
      ocb serve status --brain /tmp/brain
      ocb serve stop --brain /tmp/brain
    """
    if ctx.invoked_subcommand is not None:
        return
    from ocb_events.errors import InputError

    b = need_brain(brain)
    ws = workspace.absolute() if workspace is not None else None
    if detach and stdio:
        raise InputError("--detach and --stdio exclude each other", "pass one of them")
    for name, value in (("--timeout", timeout), ("--idle-timeout", idle_timeout)):
        if not value > 0:
            raise InputError(f"{name} must be above 0, not {value:g}", f"pass {name} 60")
    if detach:
        _detach(b, ws, debounce, timeout, idle_timeout)
        return
    from ocb.cli.rpc import CommandLine
    from ocb.daemon.methods import methods
    from ocb.daemon.run import serve as serve_brain

    app = CommandLine(ctx.find_root().command)
    serve_brain(
        b, ws, lambda live: methods(live, app), stdio=stdio, debounce_ms=debounce,
        timeout=timeout, idle_s=idle_timeout, echo=sys.stderr,
    )  # fmt: skip


def _detach(brain: Path, ws: Path | None, debounce: int, timeout: float, idle: float) -> None:
    from ocb.daemon.run import spawn

    argv = ["serve", "--brain", str(brain), "--debounce", str(debounce), "--timeout",
            str(timeout), "--idle-timeout", str(idle)]  # fmt: skip
    if ws is not None:
        argv += ["--workspace", str(ws)]
    hello = spawn(argv, brain, create=ws is not None)  # a new brain: run/ holds the log
    how = "serving" if hello["started"] else "already served by another client's daemon:"
    typer.echo(
        f"{how} {brain} (pid {hello['pid']}, seq {hello['seq']}); "
        f"log {brain / 'run' / 'daemon.log'}; stop: ocb serve stop --brain {brain}"
    )


def _ask(brain: Path, method: str) -> Any:
    from ocb.daemon.protocol import RpcError, call, connect
    from ocb_events.errors import OcbError

    sock = connect(brain, timeout=30.0)
    if sock is None:
        raise OcbError(
            f"no daemon serves {brain}", f"start one: ocb serve --brain {brain} --detach"
        )
    try:
        with sock:
            return call(sock, method)
    except RpcError as exc:
        raise OcbError(exc.message, exc.hint) from None
    except OSError as exc:
        raise OcbError(
            f"the daemon of {brain} did not answer: {exc}",
            f"see {brain / 'run' / 'daemon.log'}; stop it: ocb serve stop --brain {brain}",
        ) from None


def _status_text(s: dict[str, Any]) -> str:
    last = s.get("last_sync") or {}
    lines = [
        f"daemon pid {s['pid']} serving {s['brain']}",
        f"  uptime    {s['uptime_s']:.0f} s",
        f"  seq       {s['seq']}",
        f"  clients   {s['clients']} connected, {s['requests']} requests, "
        f"{s['writes']} writes in {s['groups']} groups",
        f"  workspace {s.get('workspace') or '(none)'}: {s.get('watched_files', 0)} files",
        f"  last sync {('seq ' + str(last['seq'])) if last else '(none)'}",
        f"  memory    {s['rss_bytes'] / 2**20:.1f} MiB",
    ]
    if s.get("log", "local") != "local":
        state = "answering" if s.get("log_reachable") else "NOT ANSWERING (reads go on)"
        lines.append(
            f"  log       {s['log']}: {state}, "
            f"{s.get('log_catch_ups', 0)} catch-ups of other brains' records"
        )
    return "\n".join(lines)


@serve.command()
@runs("local")
@handled
def status(brain: MaybeBrain = None, as_json: JsonOpt = False) -> None:
    """Show the daemon serving a brain: pid, uptime, seq, clients, files, memory, and
    for a shared log its URL (never the password) and whether its server answers.

    \b
    Example:
      ocb serve status --brain /tmp/brain --json
    """
    out(_ask(need_brain(brain), "status"), as_json, _status_text, lambda s: s)


@serve.command()
@runs("local")
@handled
def stop(
    brain: MaybeBrain = None,
    grace: Annotated[
        float, typer.Option(help="Seconds to wait for a clean stop before forcing it.")
    ] = 30.0,
) -> None:
    """Stop the daemon serving a brain and wait until its process has exited:
    in-flight requests finish, writes are flushed, snapshots written, the socket
    removed. A daemon still running after --grace seconds is ended with SIGTERM, then
    SIGKILL (every acknowledged write is in the log either way), and the output says so.

    \b
    Example:
      ocb serve stop --brain /tmp/brain
    """
    from ocb.daemon.stop import stop as stop_daemon
    from ocb_events.errors import InputError

    if not grace >= 0:
        raise InputError(f"--grace must be 0 or more, not {grace:g}", "pass --grace 30")
    done = stop_daemon(need_brain(brain), grace_s=grace)
    if done.how == "asked":
        typer.echo(f"stopped daemon pid {done.pid}")
        return
    why = (
        f"did not stop within {grace:g} s of the request"
        if done.answered
        else "held the brain's lock but did not answer on its socket"
    )
    typer.echo(
        f"daemon pid {done.pid} {why}; ended it with {done.how.upper()} after "
        f"{done.waited_s:g} s (requests still running were dropped; every acknowledged "
        "write is in the log)"
    )


@group.command()
@runs("local")
@handled
def watch(
    brain: MaybeBrain = None,
    workspace: Annotated[
        Path | None, typer.Option(help="Workspace to watch (default: the brain's own).")
    ] = None,
    debounce: Annotated[int, typer.Option(help="Quiet time before a sync, in ms.")] = 300,
) -> None:
    """Keep a brain in step with its workspace as files change (no server).

    Syncs what changed while nothing watched, then each batch of changes once the
    files are quiet for --debounce ms; one line per sync on stderr; Ctrl-C stops.

    \b
    Example:
      ocb watch --brain /tmp/brain --workspace examples/workspace
    """
    from ocb.daemon.run import watch as watch_brain

    ws = workspace.absolute() if workspace is not None else None
    watch_brain(need_brain(brain), ws, debounce_ms=debounce, echo=sys.stderr)
