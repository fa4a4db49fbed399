"""The injectable clock: a callable returning nanoseconds since the Unix epoch."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]


def system_clock() -> int:
    """The wall clock, in nanoseconds since the Unix epoch."""
    return time.time_ns()


class TickClock:
    """A deterministic clock for tests and simulations: starts at ``start_ns`` and
    advances by ``step_ns`` on every call.

    Example:
        >>> clock = TickClock(start_ns=0, step_ns=1_000)
        >>> clock(), clock()
        (0, 1000)
    """

    def __init__(self, start_ns: int = 1_767_225_600_000_000_000, step_ns: int = 1_000_000) -> None:
        self.now_ns = start_ns
        self.step_ns = step_ns

    def __call__(self) -> int:
        now = self.now_ns
        self.now_ns += self.step_ns
        return now

    def advance(self, ns: int) -> None:
        """Jump forward by ``ns`` nanoseconds."""
        self.now_ns += ns
