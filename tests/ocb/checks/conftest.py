"""A brain with a history of current facts, shared by the tests of ``ocb verify`` and
its repair."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb_events.clock import TickClock

SUBJECT = "Discord API"


@pytest.fixture
def facts(built: Path) -> tuple[Path, int]:
    """The example brain with three statements of one fact, a snapshot after every
    command and an analytics store; returns it and the seq of the middle statement."""
    with Brain(built, clock=TickClock(start_ns=1_800_000_000_000_000_000)) as b:
        b.set_config("storage.snapshot_tail", 1)
        b.kg_set(SUBJECT, "rate_limit", "100/min", "memory/2026-11-20.md#L14")
        seq = b.kg_set(SUBJECT, "rate_limit", "120/min", "standup").seq
        b.kg_set(SUBJECT, "owner", "Alice", "standup")
        b.kg_set(SUBJECT, "rate_limit", "150/min", "standup")
    res = CliRunner().invoke(app, ["sql", "--brain", str(built), "SELECT count(*) FROM events"])
    assert res.exit_code == 0, res.stderr
    return built, seq
