"""Folding a range of the log the fast way: one decode pass that decodes only what the
projections at hand fold (``ocb_events.codec.fold_decoder``: the records none of them
reads cost only their envelope), and the graph's weight updates folded as arrays, one
run between two other graph records (``projections.fold_weights``).

The result is the same as ``projections.fold`` over the same records, byte for byte
in every snapshot (the tests fold both ways and compare).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import chain
from typing import Any, Protocol

from ocb_events.codec import (
    EdgesPackedRaw,
    EdgesUpdatedRaw,
    FoldPeek,
    Skipped,
    fold_decoder,
    fold_run_decoder,
)
from ocb_events.log import SegmentLog
from ocb_events.protocol import EncodedLog, EventLog
from ocb_events.schema import EdgesUpdated, FoldRecord, Record
from ocb_events.segments import RunDecode, read_runs
from projections import PROJECTIONS, ROUTES, fold_weights
from replay.weights import WeightRuns

Tick = Callable[[int], None]


Decoded = Record | FoldRecord | FoldPeek
_WEIGHTS = frozenset({EdgesPackedRaw, EdgesUpdatedRaw, EdgesUpdated})
"""The kinds of a weight update, as each log gives it (``WeightRuns.gather``)."""


Through = Callable[[RunDecode], RunDecode]
"""What a segment log's records pass through as they are decoded (``read_for``)."""


def read_for(
    log: EventLog,
    names: Iterable[str],
    from_seq: int,
    to_seq: int,
    through: Through | None = None,
) -> Iterator[Decoded]:
    """Records ``from_seq..to_seq`` decoded for the projections ``names``: a log that
    stores records encoded (``EncodedLog``: segments, PostgreSQL) decodes only the
    events those fold (the others come as ``Skipped``), the segment log a block of
    frames at a time (each run decoded by ``through(decoder)`` when given: a segment
    log only); any other log gives its light records."""
    tags = frozenset().union(*(ROUTES[n] for n in names))
    if not isinstance(log, SegmentLog):
        if through is not None:
            raise TypeError("only a segment log reads its records through a run decoder")
        if isinstance(log, EncodedLog):
            return log.read_decoded(from_seq, to_seq, fold_decoder(tags))
        return log.read(from_seq, to_seq, light=True)
    limit = min(to_seq, log.last_seq)
    if max(from_seq, 1) > limit:
        return iter(())
    return chain.from_iterable(_runs(log, tags, max(from_seq, 1), limit, through))


def _runs(
    log: SegmentLog, tags: frozenset[str], from_seq: int, limit: int, through: Through | None
) -> Iterator[Iterable[Any]]:
    decode: RunDecode = fold_run_decoder(tags)
    if through is not None:
        decode = through(decode)
    for seg, fmt, off, expected in log._starts(from_seq, limit):
        yield from read_runs(
            seg, fmt, off, expected, from_seq, limit, decode, log._segments, light=True
        )


class Away(Protocol):
    """Where a fold sends the records of the projections another process folds
    (``replay.split.Forward``)."""

    def wants(self, kind: type) -> bool:
        """Whether records whose event is of ``kind`` are sent."""
        ...

    def send(self, rec: Decoded) -> None:
        """Send one record (of a kind it wants)."""
        ...


def fold_fast(
    records: Iterable[Decoded],
    states: dict[str, Any],
    tick: Tick | None = None,
    away: Away | None = None,
) -> dict[str, Any]:
    """Fold ``records`` into ``states`` (consumed), skipping records a state already
    holds, as ``projections.fold`` does; ``tick(seq)`` is called for every record, and
    ``away`` is sent those it wants, in log order."""
    names = sorted(states)
    evolves = [PROJECTIONS[n].evolve for n in names]
    current = [states[n] for n in names]
    starts = [st.seq for st in current]
    g = names.index("graph") if "graph" in names else -1
    runs = WeightRuns()
    gather = runs.gather
    routes: dict[type, tuple[list[int], bool]] = {}
    wants, send = (away.wants, away.send) if away is not None else (_none, _none)
    last = 0
    for rec in records:
        ev: Any = rec.event
        kind: type = type(ev)
        seq = last = rec.seq
        if tick is not None:
            tick(seq)
        got = routes.get(kind)
        if got is None:
            got = routes[kind] = (_route(kind, names), wants(kind))
        route, out = got
        if out:
            send(rec)
        if kind in _WEIGHTS:
            if g >= 0 and seq > starts[g] and gather(seq, ev):
                fold_weights(current[g], runs.take())
            continue
        if g in route and len(runs):
            fold_weights(current[g], runs.take())
        for i in route:
            if seq > starts[i]:
                current[i] = evolves[i](current[i], rec)
    if len(runs):
        fold_weights(current[g], runs.take())
    for n, st in zip(names, current, strict=True):
        st.seq = max(st.seq, last)
        states[n] = st
    return states


def _none(_: object) -> bool:
    return False


def _route(kind: type, names: list[str]) -> list[int]:
    """The projections (by index in ``names``) that fold events of ``kind``."""
    if issubclass(kind, Skipped):
        return []
    tag = getattr(kind, "__struct_config__").tag  # noqa: B009 (not every kind is typed as a Struct)
    return [i for i, n in enumerate(names) if tag in ROUTES[n]]


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Keep the cycle collector off for a long fold: it folds hundreds of thousands of
    acyclic records into states of millions of objects, which each full collection
    rescans (about a tenth of a rebuild at 1,000,000 events) with nothing to free.
    Reference counting still frees every record; the collector's state is restored."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
