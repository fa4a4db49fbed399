"""How to install one of ocb's optional extras (``embed``, ``mcp``, ``plot``) into the
environment that runs it, for the hints of the errors that need one.

No package index serves ocb, so ``pip install 'ocb[mcp]'`` installs nothing (or another
project of that name). The command that works depends on how ocb was installed:

* from a checkout (``pip install -e .``, or the source tree on ``PYTHONPATH``): the
  checkout again with the extra, ``PYTHON -m pip install -e '/path/to/clone[mcp]'``;
* from a wheel: the extra's own packages, as the wheel's metadata lists them,
  ``PYTHON -m pip install 'mcp<3,>=2.3'``.

``PYTHON`` is the interpreter running ocb, so the packages land where ocb looks.
"""

from __future__ import annotations

import shlex
import sys
import tomllib
from importlib import metadata
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]
"""The ``ocb`` package's directory."""


def checkout_root(package_dir: Path = _PACKAGE) -> Path | None:
    """The source tree ``package_dir`` (the ``ocb`` package) lies in, when it is a
    checkout of this project: a ``pyproject.toml`` beside it naming ``ocb``."""
    pyproject = package_dir.parent / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    return package_dir.parent if project.get("name") == "ocb" else None


def extra_requirements(extra: str) -> list[str]:
    """The packages the installed ocb distribution lists for ``extra`` (none when ocb
    is not installed as a distribution)."""
    try:
        requires = metadata.requires("ocb") or []
    except metadata.PackageNotFoundError:
        return []
    out = []
    for req in requires:
        spec, _, marker = req.partition(";")
        if marker.replace("'", '"').replace(" ", "") == f'extra=="{extra}"':
            out.append(spec.strip())
    return out


def install_command(extra: str, package_dir: Path = _PACKAGE) -> str:
    """The shell command that installs ``extra`` for the ocb running here (see the
    module's doc).

    Example:
        >>> install_command("mcp")  # doctest: +SKIP
        "/srv/ocb/.venv/bin/python -m pip install -e '/srv/ocb[mcp]'"
    """
    pip = f"{shlex.quote(sys.executable)} -m pip install"
    root = checkout_root(package_dir)
    if root is not None:
        return f"{pip} -e {shlex.quote(f'{root}[{extra}]')}"
    reqs = extra_requirements(extra)
    if reqs:
        return f"{pip} " + " ".join(shlex.quote(r) for r in reqs)
    return f"{pip} -e '.[{extra}]' (in a clone of ocb)"
