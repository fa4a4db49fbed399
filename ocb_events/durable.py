"""Replacing a file durably: the new bytes go to a temp file beside it, are fsynced and
renamed over it, so a crash leaves the old file or the new one, never half of one; the
temp file is removed when anything fails (and one a kill left behind is swept by the
writer that next opens the brain)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def replace_file(path: Path, chunks: Iterable[bytes | bytearray], tmp: Path) -> None:
    """Write ``chunks`` to ``tmp``, fsync it and rename it to ``path``.

    Raises:
        OSError: the disk refused the write (``tmp`` is removed, ``path`` unchanged).
    """
    try:
        with open(tmp, "wb") as fh:
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
