"""Shared pytest configuration: hypothesis profiles selected by ``HYPOTHESIS_PROFILE``,
and the fixtures of the example workspace and its brain.

``ci`` (the default, what CI runs) uses more examples, derandomized, and prints the
blob that reproduces a failure; ``dev`` keeps local iterations fast.

The example brain is built once per session (once per xdist worker) and copied into
each test that asks for it. A brain records the absolute path of its workspace, so
every test's fresh copy of the example workspace sits at one path per session, the
path the session's brain was built from: a copied brain syncs with it as the brain a
test built itself did.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from ocb.brain import Brain
from ocb_events.clock import TickClock
from tests.ocb.support import build_example, fresh_copy

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


@pytest.fixture(scope="session")
def example_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the example workspace of every test lives (one directory per session)."""
    return tmp_path_factory.mktemp("example", numbered=False)


@pytest.fixture(scope="session")
def example_brain(example_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example workspace's brain, built once: ``Brain.create`` with ``TickClock()``,
    synced, closed. Never opened again; tests get a copy (``built``)."""
    workspace = fresh_copy(example_home / "workspace")
    return build_example(tmp_path_factory.mktemp("example-brain") / "brain", workspace)


@pytest.fixture
def workspace(example_home: Path) -> Path:
    """A fresh copy of the example workspace, free to change (the next test gets a new
    one), at the path the session's example brains were built from."""
    return fresh_copy(example_home / "workspace")


@pytest.fixture
def built(tmp_path: Path, workspace: Path, example_brain: Path) -> Path:
    """A brain directory indexed from the example workspace (closed): a private copy of
    the session's example brain, byte for byte what building it here would give."""
    path = tmp_path / "brain"
    shutil.copytree(example_brain, path)
    return path


@pytest.fixture
def brain(built: Path) -> Iterator[Brain]:
    with Brain(built, clock=TickClock(start_ns=1_800_000_000_000_000_000)) as b:
        yield b


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """A real PostgreSQL server for the session (``tests.pg_server``); fails, never
    skips, when its packages are missing."""
    from tests.pg_server import PgServer

    server = PgServer()
    try:
        yield server
    finally:
        server.cleanup()
