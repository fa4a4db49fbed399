"""The brain a daemon holds open, seen by a command it runs for a client: the command
uses that brain instead of opening it again (it could not: the daemon holds its lock).

NOTE: on the start path of every ``ocb`` command: the standard library only.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocb.brain import Brain

__all__ = ["SERVED"]

SERVED: ContextVar[Brain | None] = ContextVar("SERVED", default=None)
"""The brain a daemon holds open, while it runs a command for a client."""
