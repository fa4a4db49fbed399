"""What the live-brain abuse trials of ``bench_reliability.py --live`` share: a trial's
shape and a served brain of the example workspace to try it on.

A trial module (``benchmarks/abuse_<area>.py``) exports ``TRIALS``, a list of ``Trial``:
a name, the attack it tries (one line), and a function that gets a fresh scratch
directory, runs the attack against a real ``ocb`` daemon process (or the ``ocb``
command), and returns ``(held, detail)``: whether the brain held, and one line saying
what was seen.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.live_support import ENV, REPO, init, ocb

__all__ = ["ENV", "EXAMPLE", "Trial", "example_brain", "run"]

EXAMPLE = REPO / "examples" / "workspace"


@dataclass(frozen=True)
class Trial:
    """One abuse scenario: ``fn(scratch) -> (held, detail)``."""

    name: str
    attack: str
    fn: Callable[[Path], tuple[bool, str]]


def example_brain(root: Path) -> tuple[Path, Path]:
    """A copy of the example workspace under ``root`` and a brain indexed from it
    (``ocb init``); returns ``(workspace, brain)``."""
    ws = root / "workspace"
    shutil.copytree(EXAMPLE, ws)
    brain = root / "brain"
    init(ws, brain)
    return ws, brain


def run(
    *argv: str, timeout: float = 120.0, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``ocb <argv>`` in this checkout, its output captured."""
    return subprocess.run(
        ocb(*argv), env=ENV, capture_output=True, text=True, timeout=timeout, cwd=cwd
    )
