"""Readers beside one writer: the lock that keeps a served brain's projections whole.

Readers hold the gate shared while they read projections; the writer holds it
exclusively only while it folds records into them (and for the few commands that
replace projections wholesale, such as ``forget``). A waiting writer goes first, so a
stream of readers never starves a fold, and a fold never waits for a disk flush.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Gate"]


class Gate:
    """A readers-writer lock that prefers the writer. Not re-entrant across kinds: a
    thread that holds it shared must not ask for it exclusively. The writer thread may
    re-enter ``write`` (nested folds)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer: int | None = None
        self._depth = 0
        self._waiting = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writer is not None or self._waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._cond:
            if self._writer == me:
                self._depth += 1
            else:
                self._waiting += 1
                while self._writer is not None or self._readers:
                    self._cond.wait()
                self._waiting -= 1
                self._writer, self._depth = me, 1
        try:
            yield
        finally:
            with self._cond:
                self._depth -= 1
                if not self._depth:
                    self._writer = None
                    self._cond.notify_all()
