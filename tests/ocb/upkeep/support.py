"""A duplicate in the example workspace, for the merge and blob tests: the first lines
of the rollback runbook copied into another note, and asked about."""

from __future__ import annotations

from pathlib import Path

from ocb.brain import Brain

DUPLICATE = "when to roll back: API 5xx rate above 1%, p99 latency above 800 ms"
ROLLBACK, COPY = "runbooks/rollback.md", "notes/rollback-copy.md"


def copy_and_ask(brain: Brain, workspace: Path) -> None:
    """Copy the first 13 lines of the rollback runbook into another file and ask about
    them three times."""
    lines = (workspace / ROLLBACK).read_text().splitlines()
    (workspace / COPY).write_text("\n".join(lines[:13]) + "\n")
    brain.sync(workspace)
    for _ in range(3):
        brain.query(DUPLICATE)
