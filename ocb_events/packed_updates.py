"""The packed body of a weight update: its updates and baselines as flat columns.

NOTE: the layout here is part of the storage format (``edges_packed`` records,
``ocb_events.codec``); change it only with a new ``UPDATES_VERSION``, and keep
decoding every version ever written.

An ``edges_updated`` record holds a few dozen node ids, each repeated (a source is
also a target of another update, and has a baseline), and a float per change. The
body stores every id once in a table and each use as its index, and every float as
its raw IEEE bytes, so a run of bodies is read with a few array operations
(``replay.weights``). All integers are little-endian u32, floats little-endian f64::

    header     version, S (bytes of the structure), D (deltas), B (baselines)
    structure  number of strings, number of updates,
               the byte length of each string, the strings (UTF-8),
               per update its source, its number of targets, its number of deltas,
               every update's targets, each baseline's node   (all as string indices)
    padding    zeros up to a multiple of 8 bytes
    floats     the D deltas in order, the B baseline values

A body's size is a multiple of 8, so bodies joined end to end keep their floats
8-aligned. The header and the structure (``structure_key``) say everything but the
numbers: two bodies with the same structure differ only in their floats. Decoding
gives back exactly the lists packed (an update's targets and deltas may differ in
length; floats bit for bit).
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Sequence

from ocb_events.parts import EdgeDeltas, NodeValue

UPDATES_VERSION = 1
HEADER = struct.Struct("<4I")
"""version, structure bytes, deltas, baselines."""

_U32_MAX = 2**32 - 1
_SWAP = sys.byteorder != "little"


class BadUpdates(ValueError):
    """The packed body of a weight update is not one this version can read."""


def _le(col: array) -> bytes:  # type: ignore[type-arg]
    if _SWAP:
        col = array(col.typecode, col)
        col.byteswap()
    return col.tobytes()


def _col(code: str, data: bytes | memoryview) -> array:  # type: ignore[type-arg]
    col = array(code)
    col.frombytes(data)
    if _SWAP:
        col.byteswap()
    return col


def pack_updates(updates: Sequence[EdgeDeltas], baselines: Sequence[NodeValue]) -> bytes:
    """The packed body of ``updates`` and ``baselines``.

    Raises:
        ValueError: a list too long for the layout, or an id that is not UTF-8
            (the caller stores such a record in the msgpack form).
        OverflowError: a number that is not a float64.
    """
    index: dict[str, int] = {}

    def at(s: str) -> int:
        i = index.get(s)
        if i is None:
            i = index[s] = len(index)
        return i

    sources = array("I", (at(u.source) for u in updates))
    targets = array("I", (at(t) for u in updates for t in u.targets))
    nodes = array("I", (at(b.node) for b in baselines))
    names = [s.encode() for s in index]
    deltas = array("d", (d for u in updates for d in u.deltas))
    values = array("d", (b.value for b in baselines))
    structure = b"".join(
        (
            _le(array("I", (len(index), len(updates)))),
            _le(array("I", map(len, names))),
            *names,
            _le(sources),
            _le(array("I", (len(u.targets) for u in updates))),
            _le(array("I", (len(u.deltas) for u in updates))),
            _le(targets),
            _le(nodes),
        )
    )
    if max(len(structure), len(deltas), len(values)) > _U32_MAX:
        raise ValueError("weight update too large to pack")
    head = HEADER.pack(UPDATES_VERSION, len(structure), len(deltas), len(values))
    pad = bytes(-len(structure) % 8)
    return head + structure + pad + _le(deltas) + _le(values)


def structure_key(body: bytes) -> bytes:
    """What a body holds but its floats (header counts, ids, padding): bodies with the
    same key unpack to the same ids and lists."""
    size = HEADER.unpack_from(body)[1] if len(body) >= HEADER.size else 0
    return body[4 : HEADER.size + size + (-size % 8)]


class Structure:
    """A body's structure unpacked: per update its source, its targets and the number
    of its deltas; each baseline's node."""

    __slots__ = ("baseline_nodes", "deltas", "sources", "targets")

    def __init__(self, body: bytes | memoryview) -> None:
        """Raises:
        BadUpdates: the body is damaged or of an unknown version."""
        if len(body) < HEADER.size:
            raise BadUpdates("body shorter than its header")
        version, size, n_deltas, n_base = HEADER.unpack_from(body)
        if version != UPDATES_VERSION:
            raise BadUpdates(f"packed updates of version {version}")
        floats_at = HEADER.size + size + (-size % 8)
        if len(body) != floats_at + 8 * (n_deltas + n_base):
            raise BadUpdates("body of the wrong size")
        if any(body[HEADER.size + size : floats_at]):
            raise BadUpdates("nonzero padding")
        view = memoryview(body)[HEADER.size : HEADER.size + size]
        try:
            self._read(view, n_deltas, n_base)
        except (UnicodeDecodeError, IndexError, ValueError) as exc:
            raise BadUpdates(f"bad structure: {exc}") from exc

    def _read(self, view: memoryview, n_deltas: int, n_base: int) -> None:
        if len(view) < 8:
            raise BadUpdates("structure shorter than its counts")
        n_str, n_up = _col("I", view[:8])
        at = 8 + 4 * n_str
        lengths = _col("I", view[8:at])
        if len(lengths) != n_str:
            raise BadUpdates("string table cut short")
        strings = []
        for n in lengths:
            strings.append(str(view[at : at + n], "utf-8"))
            at += n
        rest = _col("I", view[at:]) if (len(view) - at) % 4 == 0 else None
        if rest is None or at > len(view):
            raise BadUpdates("structure of the wrong size")
        sources, n_targets, n_each = rest[:n_up], rest[n_up : 2 * n_up], rest[2 * n_up : 3 * n_up]
        total = sum(n_targets)
        if len(rest) != 3 * n_up + total + n_base or sum(n_each) != n_deltas:
            raise BadUpdates("counts that do not add up")
        ids = rest[3 * n_up :]
        if ids and max(ids) >= n_str or sources and max(sources) >= n_str:
            raise BadUpdates("a string index past the table")
        if not _canonical(sources, ids, n_str) or len(set(strings)) != n_str:
            raise BadUpdates("a string table not in the order of first use")
        flat = [strings[i] for i in ids[:total]]
        self.sources = [strings[i] for i in sources]
        ends = [0]
        for n in n_targets:
            ends.append(ends[-1] + n)
        self.targets = [tuple(flat[a:b]) for a, b in zip(ends, ends[1:], strict=False)]
        self.deltas = list(n_each)
        self.baseline_nodes = [strings[i] for i in ids[total:]]


def _canonical(sources: array, ids: array, n_str: int) -> bool:  # type: ignore[type-arg]
    """Whether every string is used and numbered in the order of first use (sources,
    then targets, then baselines' nodes), as ``pack_updates`` numbers them: so a body
    that unpacks packs back to the same bytes."""
    seen = 0
    for i in (*sources, *ids):
        if i == seen:
            seen += 1
        elif i > seen:
            return False
    return seen == n_str


def unpack_updates(
    body: bytes | memoryview,
) -> tuple[tuple[EdgeDeltas, ...], tuple[NodeValue, ...]]:
    """The updates and baselines packed in ``body``, equal to those packed.

    Raises:
        BadUpdates: the body is damaged or of an unknown version (its caller names
            the record).
    """
    shape = Structure(body)
    size = HEADER.unpack_from(body)[1]
    floats = _col("d", body[HEADER.size + size + (-size % 8) :]).tolist()
    updates = []
    at = 0
    for source, targets, n in zip(shape.sources, shape.targets, shape.deltas, strict=True):
        updates.append(
            EdgeDeltas(source=source, targets=targets, deltas=tuple(floats[at : at + n]))
        )
        at += n
    baselines = tuple(
        NodeValue(node=node, value=v)
        for node, v in zip(shape.baseline_nodes, floats[at:], strict=True)
    )
    return tuple(updates), baselines
