"""The shape of the code: curated public surfaces, imports pointing inward, lint."""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["ocb", "ocb_events", "projections", "replay", "workspace_sync"]
OURS = set(PACKAGES)
# which of our packages each package may import (besides itself)
ALLOWED = {
    "ocb_events": set(),
    "projections": {"ocb_events.schema"},
    "replay": {"ocb_events", "projections"},
    "workspace_sync": {"ocb_events"},
    "ocb": {"ocb_events", "projections", "replay", "workspace_sync"},
}


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_sorted_and_names_what_the_package_defines(package: str) -> None:
    mod = importlib.import_module(package)
    names = mod.__all__
    assert names == sorted(names) and len(names) == len(set(names))
    for name in names:
        assert hasattr(mod, name), f"{package}.__all__ names missing {name}"


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_point_inward(package: str) -> None:
    for path in sorted((ROOT / package).rglob("*.py")):
        for name in imports_of(path):
            top = name.split(".")[0]
            if top not in OURS or top == package:
                continue
            allowed = ALLOWED[package]
            assert name in allowed or top in allowed, f"{path.relative_to(ROOT)} imports {name}"


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        ["mypy"],
    ],
    ids=["ruff-check", "ruff-format", "mypy-strict"],
)
def test_lint(command: list[str]) -> None:
    exe = shutil.which(command[0], path=str(Path(sys.executable).parent))
    assert exe, f"{command[0]} is not installed (pip install -e '.[dev]')"
    proc = subprocess.run([exe, *command[1:]], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
