"""What the benchmarks of the live brain share (``bench_daemon``, ``bench_mcp``,
``bench_openclaw``): the environment of the ``ocb`` processes they start, their command
line, percentiles, and a brain indexed and served for the time of a block."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ocb.daemon.protocol import connect

REPO = Path(__file__).resolve().parent.parent
ENV = {
    **{k: v for k, v in os.environ.items() if k not in ("OCB_NO_DAEMON", "OCB_BRAIN")},
    "PYTHONPATH": str(REPO),
    "OPENBLAS_NUM_THREADS": "1",
}
"""This checkout's ocb, one BLAS thread, and no daemon choice inherited from the caller."""


def ocb(*argv: str) -> list[str]:
    """The command line of ``ocb <argv>`` in this interpreter."""
    return [sys.executable, "-m", "ocb.entry", *argv]


def pct(xs: list[float]) -> str:
    """``p50 / p95`` of durations in seconds, in ms."""
    p50, p95 = np.percentile(np.asarray(xs) * 1000.0, [50, 95])
    return f"{p50:.1f} / {p95:.1f}"


def init(ws: Path, brain: Path) -> None:
    """``ocb init`` of ``ws`` into ``brain``."""
    subprocess.run(ocb("init", "--brain", str(brain), "--workspace", str(ws)), env=ENV,
                   check=True, capture_output=True)  # fmt: skip


@contextmanager
def served(brain: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``ocb serve`` on ``brain`` until the block ends (then ``ocb serve stop``)."""
    proc = subprocess.Popen(ocb("serve", "--brain", str(brain)), env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        while connect(brain) is None:
            time.sleep(0.05)
        yield proc
    finally:
        subprocess.run(ocb("serve", "stop", "--brain", str(brain)), env=ENV, capture_output=True)
        proc.wait()
