"""Per-thread standard streams, so that commands the daemon runs for several clients at
once each print into their own buffers.

``install()`` replaces ``sys.stdout`` and ``sys.stderr`` with proxies; inside
``capture()`` a thread's writes go to its buffers, elsewhere to the real streams.
"""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["Captured", "capture", "install"]

_local = threading.local()


class Captured:
    """What a command printed."""

    def __init__(self) -> None:
        self.out = io.StringIO()
        self.err = io.StringIO()


class _Proxy(io.TextIOBase):
    """A text stream that writes to the current thread's buffer, or to ``real``."""

    def __init__(self, real: TextIO, which: str) -> None:
        super().__init__()
        self._real = real
        self._which = which

    encoding = "utf-8"  # what click checks before it writes text here
    errors = "strict"

    def _target(self) -> TextIO:
        cap: Captured | None = getattr(_local, "captured", None)
        if cap is None:
            return self._real
        return cap.out if self._which == "out" else cap.err

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            raise TypeError("write() argument must be str")
        return self._target().write(s)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    @property
    def buffer(self) -> _Bytes:
        """The binary side: bytes written are UTF-8 text of the same stream."""
        return _Bytes(self)

    def fileno(self) -> int:
        if getattr(_local, "captured", None) is not None:
            raise io.UnsupportedOperation("fileno")
        return self._real.fileno()


class _Bytes(io.RawIOBase):
    def __init__(self, text: _Proxy) -> None:
        super().__init__()
        self._text = text

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        data = bytes(b)
        self._text.write(data.decode("utf-8", "replace"))
        return len(data)

    def flush(self) -> None:
        self._text.flush()


def install() -> None:
    """Route ``sys.stdout``/``sys.stderr`` through per-thread proxies (idempotent)."""
    if not isinstance(sys.stdout, _Proxy):
        sys.stdout = _Proxy(sys.stdout, "out")
    if not isinstance(sys.stderr, _Proxy):
        sys.stderr = _Proxy(sys.stderr, "err")


@contextmanager
def capture() -> Iterator[Captured]:
    """Collect what this thread prints (``install()`` first)."""
    cap = Captured()
    prev = getattr(_local, "captured", None)
    _local.captured = cap
    try:
        yield cap
    finally:
        _local.captured = prev
