"""The second process of a split rebuild (``replay.rebuild``): it reads and decodes
the later part of the log while the rebuild folds the earlier part, and hands back
what the folds need of it, in log order: the records the projections fold (weight
updates aside) re-encoded light, and the weight updates as runs of arrays
(``replay.weights``). Folding stays in the first process, one record after another,
so the states are the ones a one-process rebuild gives.

It runs as ``python -m replay.split DIRECTORY FIRST END CHAIN NAME...`` (CHAIN: the
log's hash chain at END in hex, "-" for none), a fresh interpreter that imports only
what decoding needs, and writes one msgpack ``Handoff`` to stdout; it exits with
status 3, writing nothing, when the log's history up to END is not the one named by
CHAIN.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from ocb_events.codec import EdgesPackedRaw, EdgesUpdatedRaw, Skipped
from ocb_events.log import SegmentLog
from ocb_events.schema import EdgesUpdated, FoldRecord
from projections import ROUTES, WeightRun
from replay.folding import read_for
from replay.weights import WeightRuns

_OTHER_HISTORY = 3
_RECORDS = msgspec.msgpack.Decoder(list[FoldRecord])
_ENCODER = msgspec.msgpack.Encoder()


class Run(msgspec.Struct, array_like=True):
    """A run of weight updates: edge indices (int32), deltas (float64), the seqs as
    distinct values with their counts (int64), and the last baseline per node."""

    pair: bytes
    delta: bytes
    seqs: bytes
    counts: bytes
    baselines: dict[str, float]


class Handoff(msgspec.Struct, array_like=True):
    """What the second process hands back: the (source, target) of each edge index,
    and in log order, msgpack lists of light records and runs of weight updates."""

    pairs: list[tuple[str, str]]
    items: list[bytes | Run]


def start(
    log: SegmentLog, names: list[str], first: int, end: int
) -> subprocess.Popen[bytes] | None:
    """Start decoding records ``first..end`` of ``log`` for ``names`` (None when no
    interpreter can be started: an embedded Python, no processes left)."""
    chain = log.chain_of(end)
    args = [str(log.directory), str(first), str(end), chain.hex() if chain else "-", *names]
    if not sys.executable:
        return None
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "replay.split", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return None


def finish(proc: subprocess.Popen[bytes]) -> Handoff | None:
    """What the second process decoded, or None when it could not (the caller reads
    those records itself)."""
    out, _ = proc.communicate()
    if proc.returncode != 0:
        return None
    try:
        return msgspec.msgpack.decode(out, type=Handoff)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def records_of(item: bytes) -> list[FoldRecord]:
    """The light records of one item of a handoff."""
    return _RECORDS.decode(item)


def run_of(pairs: list[tuple[str, str]], run: Run) -> WeightRun:
    """The weight run of one item of a handoff."""
    seq = np.repeat(np.frombuffer(run.seqs, np.int64), np.frombuffer(run.counts, np.int64))
    pair = np.frombuffer(run.pair, np.int32).astype(np.int64)
    return WeightRun(pairs, pair, np.frombuffer(run.delta, np.float64), seq, run.baselines)


def _packed(run: WeightRun) -> Run:
    seq = run.seq
    starts = np.flatnonzero(np.concatenate(([True], seq[1:] != seq[:-1]))) if len(seq) else seq
    counts = np.diff(np.append(starts, len(seq)))
    return Run(
        pair=run.pair.astype(np.int32).tobytes(),
        delta=run.delta.astype(np.float64).tobytes(),
        seqs=seq[starts].astype(np.int64).tobytes(),
        counts=counts.astype(np.int64).tobytes(),
        baselines=run.baselines,
    )


def handoff(log: SegmentLog, names: list[str], first: int, end: int) -> Handoff:
    """Records ``first..end`` decoded for ``names``, in log order."""
    graph = ROUTES["graph"] if "graph" in names else frozenset()
    folded = frozenset().union(*(ROUTES[n] for n in names))
    runs = WeightRuns()
    items: list[bytes | Run] = []
    pending: list[Any] = []

    def flush_records() -> None:
        if pending:
            items.append(_ENCODER.encode(pending))
            pending.clear()

    def flush_run() -> None:
        if len(runs):
            flush_records()
            items.append(_packed(runs.take()))

    for rec in read_for(log, names, first, end):
        ev: Any = rec.event
        if type(ev) in (EdgesPackedRaw, EdgesUpdatedRaw, EdgesUpdated):
            if "graph" in names:
                _gather(runs, rec.seq, ev)
                if runs.full:
                    flush_run()
            continue
        if isinstance(ev, Skipped):
            continue
        tag = type(ev).__struct_config__.tag
        if tag in graph:
            flush_run()
        if tag in folded:
            pending.append(rec)
    flush_run()
    flush_records()
    return Handoff(runs.pairs, items)


def _gather(runs: WeightRuns, seq: int, ev: Any) -> None:
    if type(ev) is EdgesUpdated:
        runs.add(seq, ev)
    else:
        runs.add_raw(seq, ev)


def main(argv: list[str]) -> int:
    directory, first, end, chain, *names = argv
    with SegmentLog(Path(directory), writer=False) as log:
        last = int(end)
        got = log.chain_of(last) if last <= log.last_seq else b"?"
        if (got.hex() if got else "-") != chain:
            return _OTHER_HISTORY
        out = _ENCODER.encode(handoff(log, names, int(first), last))
    sys.stdout.buffer.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
