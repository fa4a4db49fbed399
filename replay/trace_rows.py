"""The rows of query traces (tables ``steps``, ``seeds``, ``fired``) gathered as columns
straight from the traces' packed bodies (``ocb_events.packing.narrow_columns``), for a
whole flush at once.

A trace's body holds its own string table and each use of a string as an index into it.
``TraceRows`` codes each trace's table once into the store's names (``Names``: each
name one code, the same in every table and flush; ``store.ids``), and keeps every
other column as the body stores it: at flush, each column of the batch is one numpy
operation (local indices offset into the batch's codes, floats read from their raw
bytes, the chosen candidate of every step found by comparing codes), with no object
per row: the store is handed numbers only (``followed``, a list per step, as all its
codes in a row and a length per step, made lists by DuckDB).

``read_rows`` reads a segment log with traces decoded this way (``PackedTrace``); any
other log, or a trace of the old encoding, gives full records, which ``RowFold`` packs
into the same columns (``pack_trace`` keeps every value, floats bit for bit).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec
import numpy as np

from ocb_events.codec import PACKED_TRACE, PACKED_UPDATES, EdgesPackedRaw, TraceHead, decode_record
from ocb_events.log import SegmentLog
from ocb_events.packing import BadBody, NarrowColumns, list_parts, narrow_columns
from ocb_events.schema import FoldRecord, Record
from replay.store_meta import History


class PackedTrace(msgspec.Struct, kw_only=True):
    """A compact trace record with its body's columns (``cols``, set once checked)."""

    seq: int
    ts: int
    actor: str
    event: TraceHead
    z: bytes
    cols: Any = None


class UpdatesRaw(msgspec.Struct, frozen=True, tag_field="type", tag="edges_updated"):
    """What the analytics fold reads of an ``edges_updated`` record: its rule and cause,
    its updates and baselines left as msgpack bytes (``replay.delta_runs`` parses a
    run of them at once)."""

    updates: msgspec.Raw
    rule: str
    cause_seq: int
    baselines: msgspec.Raw = msgspec.Raw(b"\x90")  # an empty array


class UpdateRecord(msgspec.Struct, frozen=True, kw_only=True):
    """An ``edges_updated`` record as ``decode_for_rows`` gives it: its updates raw
    (``UpdatesRaw``), or packed (``EdgesPackedRaw``: the packed form of the codec)."""

    seq: int
    ts: int
    actor: str
    event: UpdatesRaw | EdgesPackedRaw


_DECODER = msgspec.msgpack.Decoder(PackedTrace)
_UPDATES = msgspec.msgpack.Decoder(UpdateRecord)
_UPDATE_TAG = b"\xadedges_updated"  # the tag as msgpack writes it, near a record's start

Decoded = Record | FoldRecord | PackedTrace | UpdateRecord


def decode_for_rows(buf: bytes | memoryview, *, segment: str = "", offset: int = 0) -> Decoded:
    """A record as the analytics fold reads it: a compact trace as ``PackedTrace``, a
    weight update (either form) as ``UpdateRecord``, anything else (or anything unusual) as
    ``decode_record`` gives it."""
    if buf and buf[0] == PACKED_TRACE:
        try:
            rec = _DECODER.decode(buf)
            rec.cols = narrow_columns(rec.z)
            return rec
        except (msgspec.DecodeError, msgspec.ValidationError, BadBody):
            pass  # the full path names the damage
    elif buf[:7] == PACKED_UPDATES or _UPDATE_TAG in bytes(buf[:96]):
        try:
            return _UPDATES.decode(bytes(buf))  # (its raw parts keep what they read)
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass
    return decode_record(buf, segment=segment, offset=offset)


def read_rows(log: History, from_seq: int, to_seq: int, *, packed: bool) -> Iterator[Decoded]:
    """Records ``from_seq..to_seq``: from a segment log with compact traces left packed
    (when ``packed``), else as ``log.read`` gives them."""
    if not packed or not isinstance(log, SegmentLog):
        return iter(log.read(from_seq, to_seq))
    return log.read_decoded(from_seq, to_seq, decode_for_rows)


class Names:
    """Every name the store holds as a code (``replay.tables.CODED``): the store's
    ``store.ids`` at the start of a run (``known``), and those the run adds. Codes are
    given under a lock (a flush may code its rows on the commit thread while the fold
    goes on); ``stored`` is how many of ``table`` the store holds."""

    def __init__(self, known: Sequence[str] = ()) -> None:
        self.codes: dict[str, int] = {s: i for i, s in enumerate(known)}
        self.table: list[str] = list(known)
        self.stored = len(self.table)
        self._array: Any = np.empty(0, dtype=object)
        self._lock = threading.Lock()

    def map(self, strs: Sequence[str]) -> list[int]:
        out = list(map(self.codes.get, strs))
        if None in out:
            for i, s in enumerate(strs):
                if out[i] is None:
                    out[i] = self._add(s)
        return out  # type: ignore[return-value]

    def _add(self, s: str) -> int:
        with self._lock:
            code = self.codes.get(s)
            if code is None:
                self.table.append(s)
                code = self.codes[s] = len(self.table) - 1
        return code

    def coded(self, values: Any) -> Any:
        """Names (an object array or a list, None for NULL) as an int32 array of codes,
        masked where None; codes pass as they are."""
        if isinstance(values, np.ndarray) and values.dtype != object:
            return values
        vals = list(values)
        if None not in vals:
            return np.asarray(self.map(vals), dtype=np.int32)
        mask = np.fromiter((v is None for v in vals), dtype=bool, count=len(vals))
        codes = np.zeros(len(vals), dtype=np.int32)
        codes[~mask] = self.map([v for v in vals if v is not None])
        return np.ma.masked_array(codes, mask=mask)

    def array(self) -> Any:
        if len(self._array) != len(self.table):
            self._array = np.array(self.table, dtype=object)
        return self._array


def _floats(parts: list[bytes], count: int) -> Any:
    """The values of many float columns (``packing``'s raw form) as one float64 array."""
    widths = {p[0] for p in parts}
    if len(widths) == 1:
        kind = np.float32 if widths.pop() == 4 else np.float64
        out = np.frombuffer(b"".join([p[1:] for p in parts]), dtype=kind)
    else:
        out = np.concatenate(
            [np.frombuffer(p, np.float32 if p[0] == 4 else np.float64, offset=1) for p in parts]
            or [np.empty(0)]
        )
    assert len(out) == count
    return out.astype(np.float64)


def _flat(parts: list[Any]) -> Any:
    """Many int columns (``packing.Ints``: bytes of one-byte values, or ints) end to
    end as one int64 array: the bytes read as they are, all at once when every column
    is bytes."""
    if all(type(p) is bytes for p in parts):
        return np.frombuffer(b"".join(parts), dtype=np.uint8).astype(np.int64)
    arrays = [
        np.frombuffer(p, dtype=np.uint8) if type(p) is bytes else np.asarray(p, dtype=np.int64)
        for p in parts
    ]
    return np.concatenate(arrays).astype(np.int64) if arrays else np.empty(0, dtype=np.int64)


def _ordinals(counts: Any, first: int) -> Any:
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(len(starts), dtype=np.int64) - starts + first


class TraceRows:
    """The columns of a batch of traces, gathered a trace at a time (``add``) and
    turned into the rows of ``steps``, ``seeds`` and ``fired`` at flush (``tables``)."""

    def __init__(self, names: Names) -> None:
        self.names = names
        self.seqs: list[int] = []
        self.map: list[int] = []  # every trace's string table, as codes
        self.base: list[int] = []
        self.bodies: list[NarrowColumns] = []
        self.counts: list[Any] = []  # seeds, steps, cands, fired, fol (by trace)
        self.cols: list[Any] = []  # (``_gather``)
        self._tables: dict[str, dict[str, Any]] | None = None
        self.followed: tuple[Any, Any] | None = None
        """The ``followed`` ids of the steps ``tables`` gave (without them): how many
        each step has, and all of them as codes, step after step."""

    def __len__(self) -> int:
        return len(self.seqs)

    def add(self, seq: int, trace_id: str, cols: NarrowColumns) -> None:
        """Add one trace (its body's columns, as ``narrow_columns`` gives them; its id
        is its trace's, read by seq)."""
        self.seqs.append(seq)
        self.base.append(len(self.map))
        self.map.extend(self.names.map(cols[0]))
        self.bodies.append(cols)

    def _gather(self) -> None:
        """Every trace's columns end to end, column by column (``_build``'s input)."""
        bodies = self.bodies

        def flat(k: int) -> Any:
            return _flat([t[k] for t in bodies])

        def each(k: int) -> list[Any]:
            return [t[k] for t in bodies]

        n_cands = [len(t[11]) for t in bodies]
        followed = [list_parts(t[9]) for t in bodies]
        differ = flat(13)
        cand_start = np.cumsum(n_cands) - np.asarray(n_cands, dtype=np.int64)
        differ += np.repeat(cand_start, [len(t[13]) for t in bodies])
        self.counts = [
            [len(t[1]) for t in bodies],
            [len(t[5]) for t in bodies],
            n_cands,
            [len(t[17]) for t in bodies],
            [len(ids) for _, ids in followed],
        ]
        self.cols = [
            flat(1), each(2), each(3), each(4), flat(5), flat(6), each(7), flat(8),
            _flat([lens for lens, _ in followed]), _flat([ids for _, ids in followed]), flat(10),
            flat(11), each(12), differ, each(14), flat(15), flat(17),
        ]  # fmt: skip

    def tables(self) -> dict[str, dict[str, Any]]:
        """The rows of the batch by table, as columns (``replay.store_load.insert``)."""
        if self._tables is None:
            self._tables = self._build() if self.seqs else {}
        return self._tables

    def _build(self) -> dict[str, dict[str, Any]]:
        self._gather()
        counts = [np.asarray(n, dtype=np.int64) for n in self.counts]
        n_seeds, n_steps, n_cands, n_fired, n_fol = counts
        codes = np.asarray(self.map, dtype=np.int32)
        base = np.asarray(self.base, dtype=np.int64)
        c = self.cols

        def glob(local: list[int], per: Any) -> Any:
            return codes[np.asarray(local, dtype=np.int64) + np.repeat(base, per)]

        seqs = np.asarray(self.seqs, dtype=np.int64)

        def head(per: Any) -> dict[str, Any]:
            return {"seq": np.repeat(seqs, per)}  # (a trace's id: by its seq)

        fired = head(n_fired) | {"rank": _ordinals(n_fired, 1), "node": glob(c[16], n_fired)}
        total = int(n_seeds.sum())
        seeds = head(n_seeds) | {
            "rank": _ordinals(n_seeds, 1),
            "node": glob(c[0], n_seeds),
            "score": _floats(c[1], total),
            "lexical": _floats(c[2], total),
            "vector": _floats(c[3], total),
        }
        return {"fired": fired, "seeds": seeds, "steps": self._steps(head(n_steps), glob)}

    def _steps(self, data: dict[str, Any], glob: Any) -> dict[str, Any]:
        c = self.cols
        n_seeds, n_steps, n_cands, n_fired, n_fol = (
            np.asarray(n, dtype=np.int64) for n in self.counts
        )
        k, m = int(n_steps.sum()), int(n_cands.sum())
        chosen = glob(c[7], n_steps)
        sizes = np.asarray(c[10], dtype=np.int64)
        weights = _floats(c[12], m)
        logits = weights.copy()
        logits[np.asarray(c[13], dtype=np.int64)] = _floats(c[14], len(c[13]))
        step_of = np.repeat(np.arange(k, dtype=np.int64), sizes)
        hits = np.flatnonzero(glob(c[11], n_cands) == chosen[step_of])
        steps_hit, first = np.unique(step_of[hits], return_index=True)
        pick = hits[first]  # each step's first candidate that is its chosen one
        missing = np.ones(k, dtype=bool)
        missing[steps_hit] = False
        weight, logit = np.zeros(k), np.zeros(k)
        weight[steps_hit], logit[steps_hit] = weights[pick], logits[pick]
        tier = np.zeros(k, dtype=np.int32)
        tier[steps_hit] = glob(c[15], n_cands)[pick]
        data |= {
            "step": _ordinals(n_steps, 1),
            "hop": np.asarray(c[4], dtype=np.int64),
            "node": glob(c[5], n_steps),
            "chosen": chosen,
            "candidates": sizes,
            "stop_logit": _floats(c[6], k),
            "weight": np.ma.masked_array(weight, mask=missing),
            "logit": np.ma.masked_array(logit, mask=missing),
            "tier": np.ma.masked_array(tier, mask=missing),
        }
        self.followed = (np.asarray(c[8], dtype=np.int64), glob(c[9], n_fol))
        return data
