"""What the tests install for themselves into the cache (``$OCB_TEST_CACHE``, by default
``~/.cache/ocb``): a setup script run once per cache, one process at a time (xdist
workers wait on a lock); a second run finds it installed and does nothing."""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path


def cache_root() -> Path:
    """The tests' cache directory (created)."""
    cache = Path(os.environ.get("OCB_TEST_CACHE", Path.home() / ".cache" / "ocb"))
    cache.mkdir(parents=True, exist_ok=True)
    return cache


def install(name: str, script: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """``bash script ROOT`` run under the lock of ``name``, ROOT being ``name`` in the
    cache: the root and what the script printed."""
    cache = cache_root()
    root = cache / name
    with (cache / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = subprocess.run(
            ["bash", str(script), str(root)], capture_output=True, text=True, timeout=1800
        )
    return root, done
