"""Shared pytest configuration: hypothesis profiles selected by ``HYPOTHESIS_PROFILE``,
and the fixtures of the example workspace and its brain.

``ci`` (the default, what CI runs) uses more examples, derandomized, and prints the
blob that reproduces a failure; ``dev`` keeps local iterations fast.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from ocb.brain import Brain
from ocb_events.clock import TickClock
from tests.ocb.support import EXAMPLE

settings.register_profile(
    "dev",
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


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
