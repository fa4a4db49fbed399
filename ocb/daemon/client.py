"""The thin client: hands an ``ocb`` command to the daemon serving its brain and prints
the answer, with the same output and exit code as running it in-process.

A command is forwarded when its brain (``--brain`` or ``$OCB_BRAIN``) has a daemon
listening on ``<brain>/run/ocb.sock``; ``serve``, ``watch``, ``demo``, ``mcp`` and ``ui``
always run here, as does everything under ``--no-daemon`` or ``OCB_NO_DAEMON=1``.
Relative paths among the options are made absolute first (the daemon runs elsewhere).

NOTE: this module is the start of every ``ocb`` command: the standard library and
msgspec only (no numpy, no typer), and nothing from the rest of ocb but the protocol.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from ocb.daemon.protocol import PROTOCOL, RpcError, call, connect

__all__ = ["LOCAL_COMMANDS", "PATH_OPTIONS", "brain_of", "forward", "split_no_daemon"]

LOCAL_COMMANDS = frozenset({"serve", "watch", "demo", "mcp", "log", "export", "ui"})
"""Commands that never go to a daemon (they start one, need the brain to themselves, or
write files with a DuckDB connection of their own: export)."""
PATH_OPTIONS = frozenset(
    {"--batch", "--brain", "--labels", "--parquet", "--plot", "--sessions", "--workspace"}
)
"""The options whose value is a path (checked against the app by a test)."""


def split_no_daemon(argv: list[str], environ: Mapping[str, str]) -> tuple[list[str], bool]:
    """``argv`` without ``--no-daemon``, and whether the command must run in-process."""
    end = argv.index("--") if "--" in argv else len(argv)
    flag = "--no-daemon" in argv[:end]
    if flag:
        argv = [a for a in argv[:end] if a != "--no-daemon"] + argv[end:]
    return argv, flag or environ.get("OCB_NO_DAEMON", "") not in ("", "0")


def brain_of(argv: list[str], environ: Mapping[str, str]) -> tuple[str | None, bool]:
    """The brain a command names, and whether it came from ``$OCB_BRAIN``."""
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--brain" and i + 1 < len(argv):
            return argv[i + 1], False
        if arg.startswith("--brain="):
            return arg.split("=", 1)[1], False
    env = environ.get("OCB_BRAIN")
    return (env, True) if env else (None, False)


def _absolute(argv: list[str], cwd: str) -> list[str]:
    out: list[str] = []
    take = False
    for arg in argv:
        if take:
            out.append(os.path.join(cwd, arg))
            take = False
            continue
        name, eq, value = arg.partition("=")
        if name in PATH_OPTIONS and eq:
            out.append(f"{name}={os.path.join(cwd, value)}")
        else:
            take = arg in PATH_OPTIONS
            out.append(arg)
        if arg == "--":
            take = False
    return out


def forward(argv: list[str], environ: Mapping[str, str], cwd: str) -> int | None:
    """Run ``ocb <argv>`` on the daemon of its brain, printing what it prints; the exit
    code, or None when no daemon serves that brain (run it in-process)."""
    if not argv or argv[0].startswith("-") or argv[0] in LOCAL_COMMANDS:
        return None
    brain, from_env = brain_of(argv, environ)
    if not brain:
        return None
    brain = os.path.join(cwd, brain)
    sock = connect(brain)
    if sock is None:
        return None
    args = _absolute(argv, cwd)
    if from_env:
        end = args.index("--") if "--" in args else len(args)
        args[end:end] = ["--brain", brain]
    try:
        with sock:
            got = call(sock, "cli", {"argv": args, "protocol": PROTOCOL})
    except RpcError as exc:
        _say(sys.stderr, f"error: {exc.message}\n" + (f"hint: {exc.hint}\n" if exc.hint else ""))
        return 1
    except OSError as exc:
        _say(
            sys.stderr,
            f"error: the daemon of {brain} did not answer: {exc}\n"
            f"hint: see {Path(brain) / 'run' / 'daemon.log'}, or pass --no-daemon\n",
        )
        return 1
    _say(sys.stdout, got["stdout"])
    _say(sys.stderr, got["stderr"])
    return int(got["exit"])


def _say(stream: object, text: str) -> None:
    if text:
        stream.write(text)  # type: ignore[attr-defined]
        stream.flush()  # type: ignore[attr-defined]
