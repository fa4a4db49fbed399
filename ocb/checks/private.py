"""Whether a brain is private to its owner: its directories 0700 and its files 0600, as a
new brain is made. The log holds every query, outcome and note the agents wrote, so a
brain others may read is a leak even when its socket is private."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from replay.verify import PASS, WARN, Check

_OPEN = stat.S_IRWXG | stat.S_IRWXO
"""Permission bits of anyone but the owner."""


def open_paths(brain: Path) -> list[tuple[str, int]]:
    """Every directory and file of ``brain`` (itself included, by its own path; symlinks
    not followed) that its group or others may reach, with its mode, by path relative
    to it."""
    found: list[tuple[str, int]] = []
    for dirpath, dirnames, filenames in os.walk(brain):
        base = Path(dirpath)
        dirnames.sort()
        for name in [".", *sorted(filenames)]:
            p = base if name == "." else base / name
            try:
                st = p.lstat()
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode) or not st.st_mode & _OPEN:
                continue
            rel = p.relative_to(brain).as_posix()
            found.append((str(brain) if rel == "." else rel, stat.S_IMODE(st.st_mode)))
    return found


def privacy_check(brain: Path) -> Check:
    """A warning naming what others may read, and the command that makes it private."""
    found = open_paths(brain)
    if not found:
        return Check("privacy", PASS, "directories 0700 and files 0600: only you can read it")
    path, mode = found[0]
    return Check(
        "privacy",
        WARN,
        f"{len(found)} path(s) readable by others, e.g. {path} ({mode:o}); "
        f"make it private: chmod -R go-rwx {brain}",
    )
