"""Fixtures of the CLI tests: a brain made by ``ocb init`` from the example workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ocb.cli.support import ocb


@pytest.fixture
def cli_brain(tmp_path: Path, workspace: Path) -> Path:
    path = tmp_path / "cli-brain"
    code, out, _ = ocb("init", "--workspace", workspace, "--brain", path)
    assert code == 0
    return path
