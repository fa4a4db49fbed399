"""Replacing a file durably: the new bytes go to a temp file beside it, are fsynced and
renamed over it, so a crash leaves the old file or the new one, never half of one; the
temp file is removed when anything fails (and one a kill left behind is swept by the
writer that next opens the brain)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

FILE_MODE = 0o600
"""The mode of every file of a brain: its owner's alone, as ssh and gnupg keep theirs."""
DIR_MODE = 0o700
"""The mode of every directory of a brain."""


def private_dir(path: Path) -> None:
    """Make the directory ``path`` when it is missing, and any missing parent, 0700."""
    missing = [p for p in (path, *path.parents) if not p.is_dir()]
    for p in reversed(missing):
        try:
            p.mkdir(mode=DIR_MODE)
        except FileExistsError:
            if not p.is_dir():
                raise


def open_private(path: Path, flags: int) -> int:
    """``os.open`` of a brain's file, created 0600."""
    return os.open(path, flags | os.O_CLOEXEC, FILE_MODE)


def replace_file(path: Path, chunks: Iterable[bytes | bytearray], tmp: Path) -> None:
    """Write ``chunks`` to ``tmp``, fsync it and rename it to ``path``.

    Raises:
        OSError: the disk refused the write (``tmp`` is removed, ``path`` unchanged).
    """
    try:
        fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new file in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
