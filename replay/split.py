"""The second process of a split rebuild (``replay.rebuild``): it folds some
projections of a segment log up to a seq and writes their snapshot bytes to stdout.

It runs as ``python -m replay.split DIRECTORY END CHAIN NAME...`` (CHAIN: the log's
hash chain at END in hex, "-" for none), a fresh interpreter that imports only what a
fold needs. Its output is one msgpack map of snapshot bytes by name, or nothing with
exit status 3 when the log's history up to END is not the one named by CHAIN.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec

from ocb_events.log import SegmentLog
from projections import PROJECTIONS
from replay.folding import fold_fast, read_for

_OTHER_HISTORY = 3


def start(log: SegmentLog, names: list[str], end: int) -> subprocess.Popen[bytes]:
    """Start folding ``names`` of ``log`` up to ``end`` in a second process."""
    chain = log.chain_of(end)
    args = [str(log.directory), str(end), chain.hex() if chain is not None else "-", *names]
    return subprocess.Popen(
        [sys.executable, "-m", "replay.split", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def finish(proc: subprocess.Popen[bytes]) -> dict[str, Any] | None:
    """The states the second process folded, or None when it could not (the caller
    folds them itself)."""
    out, _ = proc.communicate()
    if proc.returncode != 0:
        return None
    try:
        bodies = msgspec.msgpack.decode(out, type=dict[str, bytes])
        return {name: PROJECTIONS[name].restore(body) for name, body in bodies.items()}
    except (msgspec.DecodeError, msgspec.ValidationError, KeyError):
        return None


def fold_snapshots(directory: Path, names: list[str], end: int, chain: str) -> bytes | None:
    """The snapshot bytes of ``names`` folded from the log in ``directory`` up to
    ``end`` as one msgpack map, or None when its history there is not ``chain``."""
    with SegmentLog(directory, writer=False) as log:
        got = log.chain_of(end) if end <= log.last_seq else b"?"
        if (got.hex() if got is not None else "-") != chain:
            return None
        states = {name: PROJECTIONS[name].initial() for name in names}
        fold_fast(read_for(log, names, 1, end), states)
    bodies = {name: PROJECTIONS[name].snapshot(state) for name, state in states.items()}
    return msgspec.msgpack.encode(bodies)


def main(argv: list[str]) -> int:
    directory, end, chain, *names = argv
    out = fold_snapshots(Path(directory), names, int(end), chain)
    if out is None:
        return _OTHER_HISTORY
    sys.stdout.buffer.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
