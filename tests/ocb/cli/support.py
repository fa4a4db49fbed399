"""Running the ``ocb`` command line in-process, for the CLI tests: its exit code,
stdout and stderr; the bytes of a brain's log; the one-error-line-and-a-hint shape."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from ocb.cli.app import app

QUESTION = "how do I roll back a bad deploy"
runner = CliRunner()


def ocb(*args: object) -> tuple[int, str, str]:
    """Run ``ocb ARGS...``: (exit code, stdout, stderr)."""
    res = runner.invoke(app, [str(a) for a in args], prog_name="ocb")
    return res.exit_code, res.stdout, res.stderr


def log_bytes(brain: Path) -> dict[str, bytes]:
    """The bytes of every log segment, by name."""
    return {p.name: p.read_bytes() for p in sorted((brain / "log").glob("*.seg"))}


def one_error(err: str, pattern: str) -> None:
    """``err`` is one ``error:`` line matching ``pattern`` and one ``hint:`` line."""
    lines = err.splitlines()
    assert len(lines) == 2 and re.match(pattern, lines[0]) and lines[1].startswith("hint: ")
