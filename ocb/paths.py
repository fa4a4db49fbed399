"""Where a brain may live: a directory of its own, made private when new."""

from __future__ import annotations

import os
from pathlib import Path

from ocb_events.durable import DIR_MODE, private_dir
from ocb_events.errors import BrainNotFound, InputError

__all__ = ["check_brain_path"]


def check_brain_path(path: Path, *, create: bool) -> None:
    """A brain directory can be (or be made) at ``path``; ``create`` makes it.

    Raises:
        InputError: ``path``, or a directory above it, is a file; or it cannot be made.
        BrainNotFound: nothing is there and ``create`` is False.
    """
    for up in (path, *path.parents):
        if up.is_dir():
            break
        if up.exists() or up.is_symlink():
            what = "a file" if up.is_file() else "not a directory"
            where = f"is {what}" if up == path else f"is under {up}, which is {what}"
            raise InputError(f"brain path {path} {where}", "pass a directory path for --brain")
    if not create:
        raise BrainNotFound(path)
    try:
        private_dir(path)
        if not any(path.iterdir()):  # new, or made empty for the brain: private
            os.chmod(path, DIR_MODE)
    except OSError as exc:
        raise InputError(
            f"cannot create brain directory {path}: {exc.strerror or exc}",
            "pass a directory you can write for --brain",
        ) from None
