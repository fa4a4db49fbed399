"""A dependency-free progress bar for stderr (drawn only when stderr is a TTY)."""

from __future__ import annotations

import sys
from typing import TextIO


class ProgressBar:
    """Call with ``(stage, done, total)``; redraws one line, finishes on ``close``."""

    def __init__(self, stream: TextIO | None = None, width: int = 28) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self._stage = ""
        self._last = -1

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        pct = int(100 * done / total)
        if stage == self._stage and pct == self._last:
            return
        if stage != self._stage and self._stage:
            self.stream.write("\n")
        self._stage, self._last = stage, pct
        fill = self.width * done // total
        bar = "#" * fill + "-" * (self.width - fill)
        self.stream.write(f"\r{stage:>8} [{bar}] {pct:3d}% {done}/{total}")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self._stage:
            self.stream.write("\n")
            self.stream.flush()
        self._stage = ""
