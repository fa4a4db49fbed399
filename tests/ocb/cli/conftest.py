"""Fixtures of the CLI tests: a brain made by ``ocb init`` from the example workspace,
run once per session (per xdist worker) and copied into each test that asks for it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.ocb.cli.support import ocb
from tests.ocb.support import fresh_copy


@pytest.fixture(scope="session")
def cli_example(example_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ocb init`` of the example workspace (with the system clock, as a user runs it),
    at the path every test's ``workspace`` has. Never opened again; tests get a copy."""
    workspace = fresh_copy(example_home / "workspace")
    path = tmp_path_factory.mktemp("cli-example") / "cli-brain"
    code, _, _ = ocb("init", "--workspace", workspace, "--brain", path)
    assert code == 0
    return path


@pytest.fixture
def cli_brain(tmp_path: Path, workspace: Path, cli_example: Path) -> Path:
    """A private copy of the ``ocb init`` brain, attached to ``workspace``."""
    path = tmp_path / "cli-brain"
    shutil.copytree(cli_example, path)
    return path
