"""A lock between processes on a derived store: shared while reading, exclusive while
writing, waited for up to a bound.

A lock file next to the store (``<store>.lock``) is locked with ``fcntl.flock``: every
reader holds it shared while it has the store open, and a writer holds it exclusive, so
a writer waits for the readers that came before it and readers wait for the writer.
Locks belong to the open file, so two stores in one process exclude each other as two
processes do. The lock file is created once and never deleted (deleting a lock file
others may hold is a race).
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from ocb_events.durable import open_private, private_dir

Mode = Literal["", "shared", "exclusive"]


class StoreLock:
    """The lock on one store (``path`` is the lock file); ``mode`` is what it holds now.

    Where the lock file cannot be created (a read-only directory, where no process can
    write the store either) the lock is a no-op.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.mode: Mode = ""
        self._fd: int | None = None

    def _open(self) -> int | None:
        if self._fd is None:
            flags = os.O_CLOEXEC
            try:
                private_dir(self.path.parent)
                self._fd = open_private(self.path, flags | os.O_RDWR | os.O_CREAT)
            except OSError:
                try:
                    self._fd = os.open(self.path, flags | os.O_RDONLY)
                except OSError:
                    return None
        return self._fd

    def acquire(
        self,
        mode: Literal["shared", "exclusive"],
        *,
        wait_s: float,
        on_wait: Callable[[], None] | None = None,
    ) -> bool:
        """Hold the lock in ``mode`` (releasing what was held first), waiting up to
        ``wait_s`` seconds for other holders; False if they still hold it then.
        ``on_wait`` is called once when the lock is not free at the first try."""
        self.release()
        fd = self._open()
        if fd is None:
            self.mode = mode
            return True
        op = fcntl.LOCK_SH if mode == "shared" else fcntl.LOCK_EX
        deadline = time.monotonic() + wait_s
        pause = 0.002
        while True:
            try:
                fcntl.flock(fd, op | fcntl.LOCK_NB)
            except BlockingIOError:
                if on_wait is not None:
                    on_wait()
                    on_wait = None
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                time.sleep(min(pause, left))
                pause = min(pause * 2, 0.05)
                continue
            self.mode = mode
            return True

    def release(self) -> None:
        """Release the lock (the file stays open for the next ``acquire``)."""
        if self.mode and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self.mode = ""

    def close(self) -> None:
        """Release the lock and close the lock file."""
        self.release()
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
