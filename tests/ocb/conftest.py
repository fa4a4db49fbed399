"""Fixtures for brain tests: a private copy of the example workspace and a brain
built from it with a deterministic clock."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from ocb.brain import Brain
from ocb_events.clock import TickClock

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    shutil.copytree(EXAMPLE, ws)
    return ws


@pytest.fixture
def built(tmp_path: Path, workspace: Path) -> Path:
    """A brain directory indexed from the example workspace (closed)."""
    path = tmp_path / "brain"
    with Brain.create(path, clock=TickClock()) as b:
        b.sync(workspace)
    return path


@pytest.fixture
def brain(built: Path) -> Iterator[Brain]:
    with Brain(built, clock=TickClock(start_ns=1_800_000_000_000_000_000)) as b:
        yield b
