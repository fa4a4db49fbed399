"""The hint that installs an optional extra names a command that works for this
install: the checkout again with the extra, or the extra's own packages for a wheel;
never ``pip install 'ocb[mcp]'``, which no package index serves."""

from __future__ import annotations

import re
import shlex
import sys
import tomllib
from pathlib import Path

import pytest

from ocb.engine.extras import checkout_root, extra_requirements, install_command

ROOT = Path(__file__).resolve().parents[3]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
PYTHON = shlex.quote(sys.executable)


def norm(req: str) -> tuple[str, frozenset[str]]:
    """A requirement's name and its set of specifiers (metadata may reorder them)."""
    m = re.match(r"[A-Za-z0-9._-]+", req.strip())
    assert m is not None
    return m[0], frozenset(filter(None, req.strip()[m.end() :].replace(" ", "").split(",")))


@pytest.mark.parametrize("extra", ["embed", "mcp", "plot"])
def test_from_a_checkout_the_hint_installs_the_checkout_with_the_extra(extra: str) -> None:
    assert checkout_root() == ROOT
    got = install_command(extra)
    assert got == f"{PYTHON} -m pip install -e {shlex.quote(f'{ROOT}[{extra}]')}"
    assert "'ocb[" not in got


@pytest.mark.parametrize("extra", ["embed", "mcp", "plot"])
def test_from_a_wheel_the_hint_installs_the_extra_s_packages(extra: str, tmp_path: Path) -> None:
    site = tmp_path / "site-packages" / "ocb"  # no pyproject.toml beside an installed package
    site.mkdir(parents=True)
    assert checkout_root(site) is None
    wanted = {norm(r) for r in EXTRAS[extra]}
    assert {norm(r) for r in extra_requirements(extra)} == wanted
    got = install_command(extra, site)
    assert got == f"{PYTHON} -m pip install " + " ".join(
        shlex.quote(r) for r in extra_requirements(extra)
    )


def test_another_project_s_tree_is_no_checkout(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\n')
    (tmp_path / "ocb").mkdir()
    assert checkout_root(tmp_path / "ocb") is None
    (tmp_path / "pyproject.toml").write_text("not toml [")
    assert checkout_root(tmp_path / "ocb") is None
