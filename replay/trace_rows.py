"""The rows of query traces (tables ``steps``, ``seeds``, ``fired``) gathered as columns
straight from the traces' packed bodies, for a whole flush at once.

A trace's body holds its own string table and each use of a string as an index into it.
``TraceRows`` codes each trace's table once into the store's names (``Names``: each
name one code, the same in every table and flush; ``store.ids``), and keeps every
other column as the body stores it (``ocb_events.packing.raw_columns``): at flush,
each column of the batch is read and checked for every body at once
(``replay.body_scan``: the checks ``packing.narrow_columns`` makes of one body), then
turned into rows by a few numpy operations (local indices offset into the batch's
codes, floats read from their raw bytes, the chosen candidate of every step found by
comparing codes), with no object per row: the store is handed numbers only
(``followed``, a list per step, as all its codes in a row and a length per step, made
lists by DuckDB).

``read_rows`` reads a log that stores records encoded (segments, PostgreSQL) with
traces decoded this way (``PackedTrace``); any other log, or a trace of the old
encoding, gives full records, which ``RowFold`` packs into the same columns
(``pack_trace`` keeps every value, floats bit for bit).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any, NamedTuple

import msgspec
import numpy as np

from ocb_events.bodies import EMPTY_BIN
from ocb_events.codec import (
    PACKED_TRACE,
    EdgesPackedRaw,
    TraceHead,
    decode_record,
    is_packed_updates,
)
from ocb_events.errors import LogCorrupt
from ocb_events.log import SegmentLog
from ocb_events.packing import BadBody, RawColumns, pack_trace, raw_columns, unpack_trace
from ocb_events.protocol import EncodedLog
from ocb_events.schema import FoldRecord, Record
from ocb_events.segments import read_body_runs
from replay.body_scan import I64, Mask, read_ints, read_lists
from replay.store_meta import History


class PackedTrace(msgspec.Struct, kw_only=True):
    """A compact trace record with its body's columns (``cols``: ``raw_columns``, read
    and checked with the rest of a flush's, ``TraceRows``), how many fired ids, seeds
    and steps it holds (``sizes``), and where it was read (``where``: segment, offset)."""

    seq: int
    ts: int
    actor: str
    event: TraceHead
    z: bytes
    cols: Any = None
    sizes: tuple[int, int, int] = (0, 0, 0)
    where: tuple[str, int] = ("", 0)


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
            got = _columned(_DECODER.decode(buf), segment, offset)
            if got is not None:
                return got
        except (msgspec.DecodeError, msgspec.ValidationError, BadBody):
            pass  # the full path names the damage
    elif is_packed_updates(buf) or _UPDATE_TAG in bytes(buf[:96]):
        try:
            return _UPDATES.decode(bytes(buf))  # (its raw parts keep what they read)
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass
    return decode_record(buf, segment=segment, offset=offset)


def _columned(rec: PackedTrace, segment: str, offset: int) -> PackedTrace | None:
    """A compact trace with its body's columns (``raw_columns``), sizes and place; None
    when a count does not read (the full path then names the damage).

    Raises:
        BadBody: the body is not a packed body of this version.
    """
    cols = raw_columns(rec.z)
    sizes = (_length(cols[17]), _length(cols[1]), _length(cols[5]))
    if min(sizes) < 0:
        return None
    rec.cols, rec.sizes, rec.where = cols, sizes, (segment, offset)
    return rec


def _length(raw: Any) -> int:
    """How many items a msgpack array holds (-1: not an array of up to 65,535)."""
    data = memoryview(raw)
    head = data[0] if len(data) else 0
    if 0x90 <= head <= 0x9F:
        return head & 0x0F
    if head == 0xDC and len(data) >= 3:
        return (data[1] << 8) | data[2]
    return -1


_BIN_HEAD = {0xC4: 2, 0xC5: 3, 0xC6: 5}
"""The header length of a msgpack bin, by its first byte."""


def _with_body(light: memoryview, bin_: memoryview, segment: str, offset: int) -> Decoded:
    """``decode_for_rows`` of a compact trace whose light payload (``light``, its body
    an empty bin) and body's bin (``bin_``) were read apart: the payload decoded and
    the body put in its place, or, for anything unusual, the payload made whole."""
    head = _BIN_HEAD.get(bin_[0], 0) if len(bin_) else 0
    if head and int.from_bytes(bin_[1:head], "big") == len(bin_) - head:
        try:
            rec = _DECODER.decode(light)
            if not rec.z:
                rec.z = bytes(bin_[head:])
                got = _columned(rec, segment, offset)
                if got is not None:
                    return got
        except (msgspec.DecodeError, msgspec.ValidationError, BadBody):
            pass  # the full path names the damage
    whole = bytes(light[: -len(EMPTY_BIN)]) + bytes(bin_)
    return decode_for_rows(whole, segment=segment, offset=offset)


def _rows_run(
    views: list[memoryview], offsets: Sequence[int], segment: str, bins: list[Any] | None
) -> Iterator[Decoded]:
    """``decode_for_rows`` of a run of payloads (``ocb_events.segments.read_body_runs``)."""
    for i, view in enumerate(views):
        body = bins[i] if bins is not None else None
        if body is None:
            yield decode_for_rows(view, segment=segment, offset=offsets[i])
        else:
            yield _with_body(view, body, segment, offsets[i])


def read_rows(log: History, from_seq: int, to_seq: int, *, packed: bool) -> Iterator[Decoded]:
    """Records ``from_seq..to_seq``: when ``packed``, from a log that stores records
    encoded (the segment log, PostgreSQL) with compact traces left packed
    (``decode_for_rows``; a compressed segment's traces read with their bodies apart,
    ``read_body_runs``), else as ``log.read`` gives them."""
    if packed and not isinstance(log, SegmentLog) and isinstance(log, EncodedLog):
        return log.read_decoded(from_seq, to_seq, decode_for_rows)
    if not (packed and isinstance(log, SegmentLog)):
        return iter(log.read(from_seq, to_seq))
    limit, first = min(to_seq, log.last_seq), max(from_seq, 1)
    if first > limit:
        return iter(())
    runs = (
        read_body_runs(seg, fmt, off, expected, first, limit, _rows_run, log._segments)
        for seg, fmt, off, expected in log._starts(first, limit)
    )
    return chain.from_iterable(chain.from_iterable(runs))


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
        try:  # (names known already: no test of each code against None)
            return list(map(self.codes.__getitem__, strs))
        except KeyError:
            get = self.codes.get
            return [code if (code := get(s)) is not None else self._add(s) for s in strs]

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


class _Floats(NamedTuple):
    """Many float columns (``packing``'s raw form: a width byte, then the values) end to
    end: their bytes, where each starts, its size and its width byte."""

    buf: Any
    starts: I64
    sizes: I64
    width: I64


def _float_columns(parts: Sequence[bytes]) -> _Floats:
    sizes = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    starts = np.cumsum(sizes) - sizes
    buf = np.frombuffer(b"".join(parts) + b"\x00", dtype=np.uint8)  # (an empty one's width)
    return _Floats(buf, starts, sizes, buf[starts].astype(np.int64))


def _widths_ok(cols: _Floats, counts: I64) -> Mask:
    """Which float columns hold ``counts`` values each: a width byte, 4 or 8, then that
    many values of that width."""
    width = cols.width
    ok: Mask = ((width == 4) | (width == 8)) & (cols.sizes - 1 == counts * width)
    return ok


def _floats(cols: _Floats, count: int) -> Any:
    """The values of many float columns (checked) as one float64 array: the values of
    each width read at once."""
    buf, starts, sizes, width = cols
    buf = buf[:-1]
    of_value = np.repeat(width, (sizes - 1) // np.maximum(width, 1))
    out = np.empty(count)
    for w, kind in ((4, np.float32), (8, np.float64)):
        sel = width == w
        if sel.all():
            keep = np.ones(len(buf), dtype=bool)
            keep[starts] = False
            return buf[keep].view(kind).astype(np.float64)
        if sel.any():
            keep = np.repeat(sel, sizes)
            keep[starts] = False
            out[of_value == w] = buf[keep].view(kind)
    return out


def _owners(counts: I64) -> I64:
    """The index of the trace each of its values belongs to, value after value."""
    return np.repeat(np.arange(len(counts), dtype=np.int64), counts)


def _ordinals(counts: Any, first: int) -> Any:
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(len(starts), dtype=np.int64) - starts + first


_INT_COLUMNS = (1, 5, 6, 8, 10, 11, 13, 15, 16, 17)
_IDS = (1, 6, 8, 11, 15, 17)  # (and the followed ids): indices into the string table


class TraceRows:
    """The columns of a batch of traces, gathered a trace at a time (``add``), then
    read and checked column by column for the whole batch (``replay.body_scan``) and
    turned into the rows of ``steps``, ``seeds`` and ``fired`` at flush (``tables``).

    A body whose columns do not agree (the checks of ``packing.narrow_columns``) is
    read as the full decoder reads it (``unpack_trace``) and packed again, or raises
    ``LogCorrupt`` as the full decoder would."""

    def __init__(self, names: Names) -> None:
        self.names = names
        self.seqs: list[int] = []
        self.map: list[int] = []  # every trace's string table, as codes
        self.base: list[int] = []
        self.bodies: list[RawColumns] = []
        self.sources: list[tuple[bytes, tuple[str, int]]] = []  # each body, where it was
        self.counts: list[Any] = []  # seeds, steps, cands, fired, fol (by trace)
        self.cols: list[Any] = []  # (``_gather``)
        self._tables: dict[str, dict[str, Any]] | None = None
        self.followed: tuple[Any, Any] | None = None
        """The ``followed`` ids of the steps ``tables`` gave (without them): how many
        each step has, and all of them as codes, step after step."""

    def __len__(self) -> int:
        return len(self.seqs)

    def add(self, seq: int, cols: RawColumns, body: bytes, where: tuple[str, int]) -> None:
        """Add one trace: its body's columns (``raw_columns``) and the body (its id is
        its trace's, read by seq)."""
        self.seqs.append(seq)
        self.base.append(len(self.map))
        self.map.extend(self.names.map(cols[0]))
        self.bodies.append(cols)
        self.sources.append((body, where))

    def _gather(self) -> None:
        """Every trace's columns end to end, column by column (``_build``'s input); the
        bodies that do not read, read again as the full decoder reads them."""
        bad = self._read()
        if len(bad):
            for i in bad.tolist():
                body, (segment, offset) = self.sources[i]
                try:
                    self.bodies[i] = raw_columns(pack_trace(*unpack_trace(body)))
                except BadBody as exc:
                    seq = self.seqs[i]
                    raise LogCorrupt(segment, offset, seq, f"bad trace body: {exc}") from exc
            self.map, self.base = [], []
            for cols in self.bodies:
                self.base.append(len(self.map))
                self.map.extend(self.names.map(cols[0]))
            bad = self._read()
            assert not len(bad)  # (a body packed by this version reads)

    def _read(self) -> Any:
        """Read and check the batch's columns; return the traces whose bodies do not
        read or whose columns do not agree."""
        bodies = self.bodies
        by_col = list(zip(*bodies, strict=True))
        ints = {k: read_ints(by_col[k]) for k in _INT_COLUMNS}
        n_lists, fol_lens, fol_ids, ok = read_lists(by_col[9])
        for _, _, read in ints.values():
            ok &= read
        cnt = {k: v[0] for k, v in ints.items()}
        n, k, m = cnt[1], cnt[5], cnt[11]
        floats = {i: _float_columns(by_col[i]) for i in (2, 3, 4, 7, 12, 14)}
        for i, per in ((2, n), (3, n), (4, n), (7, k), (12, m), (14, cnt[13])):
            ok &= _widths_ok(floats[i], per)
        ok &= (cnt[6] == k) & (cnt[8] == k) & (n_lists == k) & (cnt[10] == k)
        ok &= (cnt[15] == m) & (cnt[16] == m)
        sizes = ints[10][1]
        at = _owners(cnt[10])
        ok &= np.bincount(at, weights=sizes, minlength=len(bodies)) == m
        ok[at[sizes < 0]] = False
        differ = ints[13][1]
        at = _owners(cnt[13])
        ok[at[(differ < 0) | (differ >= m[at])]] = False
        n_fol = np.bincount(_owners(n_lists), weights=fol_lens, minlength=len(bodies))
        n_fol = n_fol.astype(np.int64)
        table = np.fromiter(map(len, by_col[0]), dtype=np.int64, count=len(bodies))
        for counts, ids in [*((cnt[i], ints[i][1]) for i in _IDS), (n_fol, fol_ids)]:
            at = _owners(counts)
            ok[at[(ids < 0) | (ids >= table[at])]] = False
        cand_start = np.cumsum(m) - m
        self.counts = [n, k, m, cnt[17], n_fol]
        self.cols = [
            ints[1][1], floats[2], floats[3], floats[4], ints[5][1], ints[6][1], floats[7],
            ints[8][1], fol_lens, fol_ids, sizes, ints[11][1], floats[12],
            differ + np.repeat(cand_start, cnt[13]), floats[14], ints[15][1], ints[17][1],
        ]  # fmt: skip
        return np.flatnonzero(~ok)

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
