"""Weight updates gathered into runs of arrays (``projections.fold_weights``).

A rebuild decodes an ``edges_updated`` record with its updates left as msgpack bytes
(``ocb_events.codec.EdgesUpdatedRaw``) and parses the updates of a whole run at once
(``replay.msgpack_scan``). The targets out of one source repeat from update to update
(a learning rule moves every edge out of each node a query walked), so each distinct
(source, targets), a *shape*, is decoded once, to the indices of its edges.

Anything the bulk parse does not expect (an update whose lists differ in length, a
delta that is not a float64) sends the run through the record-by-record path, which
cuts each update's lists to the shorter one as the fold of a record does.

A record of the packed form (``ocb_events.codec.EdgesPackedRaw``) costs less: its body
(``ocb_events.packed_updates``) holds its ids apart from its floats, so the ids of a
whole record, its *record shape*, are unpacked (and its lists cut to the shorter)
once; a record's shape is found by a *mark* made of a few words of its structure and
its structure compared in place (not hashed), and the floats of a run are read with
one gather from the joined bodies. A run that mixes the two forms (a log written
before and after the packed form) goes record by record.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from ocb_events.codec import EdgesPackedRaw, EdgesUpdatedRaw
from ocb_events.errors import LogCorrupt
from ocb_events.packed_updates import (
    HEADER,
    UPDATES_VERSION,
    BadUpdates,
    Structure,
    unpack_updates,
)
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
F64 = npt.NDArray[np.float64]


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
        self._packed = 0
        self._records = _RecordShapes(self)
        self._memo: dict[str, Any] = {}  # fold_weights's, from run to run

    def __len__(self) -> int:
        return len(self._seq)

    @property
    def full(self) -> bool:
        return len(self._seq) >= _RUN

    def gather(self, seq: int, ev: EdgesPackedRaw | EdgesUpdatedRaw | EdgesUpdated) -> bool:
        """Gather one record's updates in whichever form the log gave them; whether the
        run is now full."""
        if type(ev) is EdgesPackedRaw:  # (``add_packed``, inline: one call a record)
            self._seq.append(seq)
            self._updates.append(ev.w)
            self._baselines.append(None)
            self._packed += 1
            return len(self._seq) >= _RUN
        if type(ev) is EdgesUpdated:
            self.add(seq, ev)
        else:
            self.add_raw(seq, ev)  # type: ignore[arg-type]
        return self.full

    def add_packed(self, seq: int, body: bytes) -> bool:
        """Gather one packed record's body (``EdgesPackedRaw.w``); whether the run is
        now full (a rebuild's hot path: one call a record)."""
        self._seq.append(seq)
        self._updates.append(body)
        self._baselines.append(None)
        self._packed += 1
        return len(self._seq) >= _RUN

    def add_raw(self, seq: int, ev: EdgesUpdatedRaw | EdgesPackedRaw) -> None:
        """Gather one record's updates as decoded for a rebuild."""
        if type(ev) is EdgesPackedRaw:
            self.add_packed(seq, ev.w)  # bytes of its own
            return
        self._seq.append(seq)
        # copies: a record read a block at a time keeps a view of the whole block
        self._updates.append(msgspec.Raw(bytes(ev.updates)))  # type: ignore[union-attr]
        self._baselines.append(msgspec.Raw(bytes(ev.baselines)))  # type: ignore[union-attr]

    def add(self, seq: int, ev: EdgesUpdated) -> None:
        """Gather one decoded record's updates (a log that is not read raw)."""
        self._seq.append(seq)
        self._updates.append(ev.updates)
        self._baselines.append([(b.node, b.value) for b in ev.baselines])
        self._decoded = True

    def take(self) -> WeightRun:
        """The updates gathered so far as one run (and start gathering anew)."""
        if self._packed and self._packed == len(self._seq):
            pair, delta, seq, baselines = self._records.take(self._seq, self._updates)
        else:
            if self._packed:
                self._unpack()
            baselines = self._last_baselines()
            scanned = None if self._decoded else scan_updates(self._updates)
            if scanned is None:
                pair, delta, seq = self._one_by_one()
            else:
                pair, delta, seq = self._in_bulk(scanned)
        self._seq, self._updates, self._baselines, self._decoded = [], [], [], False
        self._packed = 0
        return WeightRun(self.pairs, pair, delta, seq, baselines, self._memo)

    def _unpack(self) -> None:
        """Decode the packed bodies of a run that mixes the two forms."""
        for i, (seq, body) in enumerate(zip(self._seq, self._updates, strict=True)):
            if type(body) is bytes:
                try:
                    updates, baselines = unpack_updates(body)
                except BadUpdates as exc:
                    raise _corrupt(seq, exc) from exc
                self._updates[i] = updates
                self._baselines[i] = [(b.node, b.value) for b in baselines]
        self._decoded = True

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


def _corrupt(seq: int, exc: Exception) -> LogCorrupt:
    return LogCorrupt("", -1, seq, f"bad weight updates: {exc}")


class _RecordShapes:
    """The shapes of packed records (every id of a record, as its structure key): per
    shape its edges (indices into the runs' pairs) and where in a body each one's delta
    is, and its baselines' nodes and where their values are.

    A record's shape is found without hashing its structure: a few of its numbers (a
    *mark*) name the shapes it may have, and the first of those whose key the body
    holds, compared in place, is its shape."""

    def __init__(self, runs: WeightRuns) -> None:
        self._runs = runs
        self._of: dict[bytes, int] = {}
        self._keys: list[bytes] = []
        self._marked: dict[int, list[int]] = {}
        self._only: dict[int, int | None] = {}  # the shape a mark names, if one
        # shape i's edges are pairs[start[i] : start[i] + len[i]], its nodes likewise
        self._pairs: list[int] = []
        self._words: list[int] = []  # of each edge's delta, from the body's start
        self._start: list[int] = []
        self._len: list[int] = []
        self._nodes: list[int] = []
        self._node_words: list[int] = []  # of each baseline's value
        self._node_start: list[int] = []
        self._node_len: list[int] = []
        self._arrays: tuple[I64, ...] = ()
        self._node_of: dict[str, int] = {}
        self._node_names: list[str] = []

    def take(self, seqs: list[int], bodies: list[bytes]) -> tuple[I64, F64, I64, dict[str, float]]:
        """The run of ``bodies`` (the records ``seqs``): its edges, deltas and seqs per
        change, and the last baseline per node."""
        data = b"".join(bodies)
        sizes = np.fromiter(map(len, bodies), dtype=np.int64, count=len(bodies))
        if ((sizes % 8) | (sizes < HEADER.size)).any():
            i = int(np.flatnonzero((sizes % 8) | (sizes < HEADER.size))[0])
            raise _corrupt(seqs[i], BadUpdates("body of the wrong size"))
        starts = np.cumsum(sizes) - sizes
        words = np.frombuffer(data, dtype="<u4")
        version, size, n_deltas, n_base = (
            words[starts // 4 + k].astype(np.int64) for k in range(4)
        )
        floats_at = starts + HEADER.size + size + (-size % 8)
        bad = (version != UPDATES_VERSION) | (sizes != floats_at - starts + 8 * (n_deltas + n_base))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise _corrupt(seqs[i], BadUpdates("bad header"))
        found = self._find(data, starts, floats_at, seqs, bodies)
        shape = np.array(found, dtype=np.int64)
        body_at = starts // 8
        floats = np.frombuffer(data, dtype="<f8")
        pairs, words, start, length, nodes, node_words, node_start, node_len = self._shapes()
        at, per = _spans(start[shape], length[shape])
        delta = floats[np.repeat(body_at, per) + words[at]].astype(np.float64, copy=False)
        seq = np.repeat(np.array(seqs, dtype=np.int64), per)
        pair = pairs[at]
        at, per = _spans(node_start[shape], node_len[shape])
        values = floats[np.repeat(body_at, per) + node_words[at]]
        return pair, delta, seq, self._last(nodes[at], values)

    def _find(
        self, data: bytes, starts: I64, floats_at: I64, seqs: list[int], bodies: list[bytes]
    ) -> list[int]:
        """The shape of each body (joined in ``data`` at ``starts``), added when new."""
        u64 = np.frombuffer(data, dtype="<u8")
        first, last = starts // 8, floats_at // 8 - 1  # words of the header and structure
        mark = u64[last].copy()
        between = ((3 * first + last) // 4, (first + last) // 2, (first + 3 * last) // 4)
        for at, mix in zip((first, first + 1, *between), _MIX, strict=True):
            mark ^= u64[at] * mix
        marks, key_at = mark.tolist(), (starts + 4).tolist()
        keys, holds = self._keys, data.startswith
        # (a key starts with its structure's size: a body that holds it has that shape)
        found: list[Any] = list(map(self._only.get, marks))
        if None not in found and all(map(holds, map(keys.__getitem__, found), key_at)):
            return found  # every mark names one shape, and each body holds its key
        found = []
        for m, a in zip(marks, key_at, strict=True):
            for s in self._marked.get(m, ()):
                if holds(keys[s], a):
                    found.append(s)
                    break
            else:
                found.append(-1)
        if -1 in found:
            ends = floats_at.tolist()
            for i in [i for i, s in enumerate(found) if s == -1]:
                found[i] = self._shape(data[key_at[i] : ends[i]], bodies[i], seqs[i])
                shapes = self._marked.setdefault(marks[i], [])
                if found[i] not in shapes:
                    shapes.append(found[i])
                    self._only[marks[i]] = found[i] if len(shapes) == 1 else None
        return found

    def _last(self, node: I64, value: F64) -> dict[str, float]:
        """The last value per node, the nodes in the order they first come."""
        if not len(node):
            return {}
        at = np.arange(len(node))
        first = np.full(len(self._node_names), len(node))
        last = np.zeros(len(self._node_names), dtype=np.int64)
        np.minimum.at(first, node, at)
        np.maximum.at(last, node, at)
        seen = np.flatnonzero(first < len(node))
        seen = seen[np.argsort(first[seen])]  # (firsts are distinct)
        names = self._node_names
        return dict(
            zip(
                [names[i] for i in seen.tolist()],
                value[last[seen]].astype(np.float64).tolist(),
                strict=True,
            )
        )

    def _shape(self, key: bytes, body: bytes, seq: int) -> int:
        """The index of the record shape ``key`` (of ``body``), added when new: each
        update's lists cut to the shorter, as the fold of a record does."""
        known = self._of.get(key)
        if known is not None:
            return known
        try:
            structure = Structure(body)
        except BadUpdates as exc:
            raise _corrupt(seq, exc) from exc
        floats_at = (len(key) + 4) // 8  # in words, from the body's start
        pairs: list[int] = []
        used: list[int] = []
        at = 0
        for source, targets, n_deltas in zip(
            structure.sources, structure.targets, structure.deltas, strict=True
        ):
            n = min(len(targets), n_deltas)
            pairs += self._runs._pair_ids(source, targets[:n])
            used += range(at, at + n)
            at += n_deltas
        nodes = []
        for node in structure.baseline_nodes:
            i = self._node_of.get(node)
            if i is None:
                i = self._node_of[node] = len(self._node_names)
                self._node_names.append(node)
            nodes.append(i)
        self._start.append(len(self._pairs))
        self._len.append(len(pairs))
        self._pairs += pairs
        self._words += [floats_at + u for u in used]
        self._node_start.append(len(self._nodes))
        self._node_len.append(len(nodes))
        self._nodes += nodes
        self._node_words += range(floats_at + at, floats_at + at + len(nodes))
        self._arrays = ()
        self._keys.append(key)
        i = self._of[key] = len(self._keys) - 1
        return i

    def _shapes(self) -> tuple[I64, ...]:
        if not self._arrays:
            self._arrays = tuple(
                np.array(x, dtype=np.int64)
                for x in (
                    self._pairs,
                    self._words,
                    self._start,
                    self._len,
                    self._nodes,
                    self._node_words,
                    self._node_start,
                    self._node_len,
                )
            )
        return self._arrays


_MIX = [
    np.uint64(m)
    for m in (
        0x9E3779B97F4A7C15,
        0xC2B2AE3D27D4EB4F,
        0x165667B19E3779F9,
        0xD6E8FEB86659FD93,
        0xFF51AFD7ED558CCD,
    )
]
"""Odd multipliers that mix words of a record's header and structure (its first two,
three between, its last) into its mark."""


def _spans(start: I64, length: I64) -> tuple[I64, I64]:
    """The indices ``start[i] .. start[i] + length[i]`` for every i, joined; and
    ``length`` (the count of each span)."""
    total = int(length.sum())
    return np.repeat(start - (np.cumsum(length) - length), length) + np.arange(total), length
