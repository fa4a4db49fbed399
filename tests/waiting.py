"""Waiting on a condition with a deadline (never a fixed sleep): real file events and
real daemons take their time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

DEADLINE = 120.0


def wait_for(cond: Callable[[], Any], what: str, deadline: float = DEADLINE) -> Any:
    """Poll ``cond`` until it returns something truthy (the value), or fail."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        got = cond()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")
