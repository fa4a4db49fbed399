"""Weight updates gathered into runs of arrays (``projections.fold_weights``).

A rebuild decodes an ``edges_updated`` record with its updates left as msgpack bytes
(``ocb_events.codec.EdgesUpdatedRaw``) and parses the updates of a whole run at once
(``replay.msgpack_scan``). The targets out of one source repeat from update to update
(a learning rule moves every edge out of each node a query walked), so each distinct
(source, targets), a *shape*, is decoded once, to the indices of its edges.

Anything the bulk parse does not expect (an update whose lists differ in length, a
delta that is not a float64) sends the run through the record-by-record path, which
cuts each update's lists to the shorter one as the fold of a record does.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from ocb_events.codec import EdgesUpdatedRaw
from ocb_events.schema import EdgeDeltas, EdgesUpdated
from projections import WeightRun
from replay.msgpack_scan import Updates, scan_baselines, scan_updates

_SHAPE = msgspec.msgpack.Decoder(tuple[str, tuple[str, ...]])
_UPDATES = msgspec.msgpack.Decoder(tuple[EdgeDeltas, ...])
_BASELINES = msgspec.msgpack.Decoder(list[tuple[str, float]])
_NAME = msgspec.msgpack.Decoder(str)
_RUN = 10_000
"""Records gathered before a run is folded: bounds the memory a rebuild holds."""

I64 = npt.NDArray[np.int64]


class WeightRuns:
    """Weight updates gathered in log order; ``take()`` gives them as one run. The
    edges' indices stay valid from one run to the next."""

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []
        self._pair_of: dict[tuple[str, str], int] = {}
        # a shape's edges are shape_pairs[shape_start[i] : shape_start[i] + shape_len[i]]
        self._shape_of: dict[bytes, int] = {}
        self._shape_pairs: list[int] = []
        self._shape_start: list[int] = []
        self._shape_len: list[int] = []
        self._arrays: tuple[I64, ...] = ()
        self._seq: list[int] = []
        self._updates: list[Any] = []  # msgpack bytes, or decoded EdgeDeltas
        self._baselines: list[Any] = []
        self._decoded = False
        self._names: dict[bytes, str] = {}

    def __len__(self) -> int:
        return len(self._seq)

    @property
    def full(self) -> bool:
        return len(self._seq) >= _RUN

    def add_raw(self, seq: int, ev: EdgesUpdatedRaw) -> None:
        """Gather one record's updates as decoded for a rebuild."""
        # copies: a record read a block at a time keeps a view of the whole block
        self._seq.append(seq)
        self._updates.append(msgspec.Raw(bytes(ev.updates)))
        self._baselines.append(msgspec.Raw(bytes(ev.baselines)))

    def add(self, seq: int, ev: EdgesUpdated) -> None:
        """Gather one decoded record's updates (a log that is not read raw)."""
        self._seq.append(seq)
        self._updates.append(ev.updates)
        self._baselines.append([(b.node, b.value) for b in ev.baselines])
        self._decoded = True

    def take(self) -> WeightRun:
        """The updates gathered so far as one run (and start gathering anew)."""
        baselines = self._last_baselines()
        scanned = None if self._decoded else scan_updates(self._updates)
        if scanned is None:
            pair, delta, seq = self._one_by_one()
        else:
            pair, delta, seq = self._in_bulk(scanned)
        self._seq, self._updates, self._baselines, self._decoded = [], [], [], False
        return WeightRun(self.pairs, pair, delta, seq, baselines)

    def _last_baselines(self) -> dict[str, float]:
        """The last baseline recorded for each node in the run."""
        scanned = None if self._decoded else scan_baselines(self._baselines)
        if scanned is None:
            last: dict[str, float] = {}
            for given in self._baselines:
                last.update(_BASELINES.decode(given) if isinstance(given, msgspec.Raw) else given)
            return last
        nodes, values = scanned
        by_key = dict(zip(nodes, values.tolist(), strict=True))  # the last one stays
        names, decode = self._names, _NAME.decode
        for key in by_key:
            if key not in names:
                names[key] = decode(key)
        return {names[key]: value for key, value in by_key.items()}

    def _in_bulk(self, scanned: Updates) -> tuple[I64, npt.NDArray[np.float64], I64]:
        data, lengths = scanned.data, scanned.lengths
        get = self._shape_of.get
        keys = [data[a:b] for a, b in zip(scanned.key_start, scanned.key_end, strict=True)]
        found = list(map(get, keys))
        if None in found:
            found = [self._shape(k) if s is None else s for k, s in zip(keys, found, strict=True)]
        shape = np.array(found, dtype=np.int64)
        pairs, start_of, len_of = self._shapes()
        if not np.array_equal(len_of[shape], lengths):  # cannot happen: the key holds them
            raise AssertionError("a shape's length differs from its update's")
        total = int(lengths.sum())
        at = np.repeat(start_of[shape] - (np.cumsum(lengths) - lengths), lengths)
        pair = pairs[at + np.arange(total)]
        seq = np.repeat(np.repeat(np.array(self._seq, dtype=np.int64), scanned.counts), lengths)
        return pair, scanned.deltas, seq

    def _shape(self, key: bytes) -> int:
        """The index of the shape ``key`` (a source and its targets, as msgpack), added
        when it is new."""
        known = self._shape_of.get(key)
        if known is not None:
            return known
        source, targets = _SHAPE.decode(b"\x92" + key)
        self._shape_start.append(len(self._shape_pairs))
        self._shape_pairs += self._pair_ids(source, targets)
        self._shape_len.append(len(targets))
        self._arrays = ()
        i = self._shape_of[key] = len(self._shape_len) - 1
        return i

    def _pair_ids(self, source: str, targets: tuple[str, ...]) -> list[int]:
        ids = []
        for target in targets:
            pair = (source, target)
            i = self._pair_of.get(pair)
            if i is None:
                i = self._pair_of[pair] = len(self.pairs)
                self.pairs.append(pair)
            ids.append(i)
        return ids

    def _shapes(self) -> tuple[I64, ...]:
        if not self._arrays:
            self._arrays = tuple(
                np.array(x, dtype=np.int64)
                for x in (self._shape_pairs, self._shape_start, self._shape_len)
            )
        return self._arrays

    def _one_by_one(self) -> tuple[I64, npt.NDArray[np.float64], I64]:
        """Each update on its own, its lists cut to the shorter, as the fold of a
        record does."""
        pairs: list[int] = []
        deltas: list[float] = []
        seqs: list[int] = []
        for seq, updates in zip(self._seq, self._updates, strict=True):
            decoded = _UPDATES.decode(updates) if isinstance(updates, msgspec.Raw) else updates
            for u in decoded:
                n = min(len(u.targets), len(u.deltas))
                pairs += self._pair_ids(u.source, u.targets[:n])
                deltas += u.deltas[:n]
                seqs += [seq] * n
        return (
            np.array(pairs, dtype=np.int64),
            np.array(deltas, dtype=np.float64),
            np.array(seqs, dtype=np.int64),
        )
