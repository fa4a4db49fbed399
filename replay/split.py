"""The second process of a rebuild split by projection (``replay.rebuild``): a fresh
interpreter folds some of the projections (the graph) while the rebuild folds the
others, and hands back each state's snapshot bytes, which the rebuild restores.

The rebuild reads the log once: as it reads, it forwards the records the second
process's projections fold (``Forward``), as they were decoded for the fold (a weight
update still a packed body), to its stdin, a frame at a time, from a thread; the
second process folds them in log order the fast way (``replay.folding.fold_fast``), so
its states are the ones a one-process rebuild gives, byte for byte. It never opens the
log itself, so any log splits alike (a PostgreSQL server reads its log once).

A segment log's records are forwarded as the payloads they were read as
(``Forward.payloads``): this process decodes only what its own projections fold (a
weight update costs it its envelope), and the second process decodes the payloads
with the decoder of its own. Any other log's records go decoded (``Forward.send``).

It runs as ``python -P -m replay.split`` (no fork: a fresh interpreter that imports
only what folding needs, from this process's tree). Its stdin is a run of frames,
each a 4-byte little-endian length and that many bytes: a msgpack ``Job``, then
frames of forwarded records, either msgpack arrays of them (``Item``) or runs of
payloads (``_PAYLOADS``, then their count and each one's length as native u32: both
processes run on this machine, then the payloads), then an empty frame; it writes one
msgpack ``Handoff`` to stdout.
"""

from __future__ import annotations

import os
import queue
import struct
import subprocess
import sys
import tempfile
import threading
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import msgspec

from ocb_events.codec import (
    PACKED_TAG,
    EdgesPackedRaw,
    EdgesUpdatedRaw,
    FoldPeek,
    Skipped,
    fold_run_decoder,
)
from ocb_events.schema import FoldRecord
from ocb_events.segments import RunDecode
from projections import PROJECTIONS, ROUTES
from replay.folding import Decoded, fold_fast, no_cycle_collection

__all__ = [
    "COMMAND",
    "ROOT",
    "Child",
    "Forward",
    "Handoff",
    "Item",
    "Job",
    "finish",
    "forward_to",
    "main",
    "start",
    "stop",
]

COMMAND = ["-m", "replay.split"]
"""The interpreter's arguments that run the second process (after ``-P``: it imports
this process's code, from ``ROOT`` first on its path, never a package in its working
directory)."""
ROOT = str(Path(__file__).resolve().parents[1])
"""The directory that holds this process's ``replay`` (and ``projections``,
``ocb_events``)."""
FRAME_BYTES = 1 << 20
"""The size from which a frame of forwarded records is sent."""
FRAMES = 64
"""Frames queued for the writing thread at most (this process waits beyond)."""

_LENGTH = struct.Struct("<I")
_PAYLOADS = 0
"""The first byte of a frame of payloads (one of records starts a msgpack array)."""
_COUNT = struct.Struct("=I")


class Job(msgspec.Struct, array_like=True):
    """What the second process folds: ``names`` over the records forwarded to it, the
    last record of the rebuild being ``end`` (every state's seq at the end)."""

    names: list[str]
    end: int


class Handoff(msgspec.Struct, array_like=True):
    """What the second process hands back: each projection's snapshot bytes, and how
    many records it folded (all that were forwarded, or its states are not taken)."""

    snapshots: dict[str, bytes]
    records: int


class _Record(msgspec.Struct, array_like=True, tag=0):
    rec: FoldRecord


class _Packed(msgspec.Struct, array_like=True, tag=1):
    seq: int
    rule: str
    cause_seq: int
    w: bytes


class _Raw(msgspec.Struct, array_like=True, tag=2):
    seq: int
    updates: msgspec.Raw
    baselines: msgspec.Raw


Item = _Record | _Packed | _Raw
"""A forwarded record: a decoded one, or a weight update as the log gave it."""
_ITEMS = msgspec.msgpack.Decoder(list[Item])


class Child(subprocess.Popen[bytes]):
    """The second process. Its stderr goes to a temporary file (``errors``), never to a
    pipe that could fill while this process reads the log and stop it."""

    errors: IO[bytes]


def start() -> Child | None:
    """Start a second process (None when no interpreter can be started: an embedded
    Python, no processes left); ``Forward`` sends it its job."""
    if not sys.executable:
        return None
    errors = tempfile.TemporaryFile()
    path = [ROOT, *filter(None, [os.environ.get("PYTHONPATH")])]
    try:
        proc = Child(
            [sys.executable, "-P", *COMMAND],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(path)},
        )
    except OSError:
        errors.close()
        return None
    proc.errors = errors
    return proc


def stop(proc: Child) -> None:
    """Kill the second process and wait for it."""
    proc.kill()
    proc.communicate()  # waits, and closes its pipes
    proc.errors.close()


def forward_to(proc: Child, job: Job) -> Forward:
    """Forward ``job`` and its records to the second process ``proc``'s stdin."""
    stdin, proc.stdin = proc.stdin, None  # written by ``Forward``, not by ``communicate``
    assert stdin is not None
    return Forward(stdin, job)


class Forward:
    """Forwards ``job`` and the records it folds to ``sink`` (the second process's
    stdin), from a thread that writes them (so this process folds on while the pipe
    is full); ``send`` forwards a record, ``records`` passes every record through
    forwarding those the job folds. ``close`` ends the stream and
    closes ``sink``; ``error`` says why the second process stopped reading, if it
    did."""

    def __init__(self, sink: IO[bytes], job: Job) -> None:
        self._stdin = sink
        self._tags = frozenset().union(*(ROUTES[n] for n in job.names))
        self._kinds: dict[type, int] = {}
        self._queue: queue.Queue[bytes | bytearray | None] = queue.Queue(FRAMES)
        self.error: str | None = None
        self.count = 0
        """Records forwarded so far."""
        self._encode = msgspec.msgpack.Encoder().encode_into
        self._buf, self._n = bytearray(_HEAD), 0
        self._lengths: array[int] = array("I")
        self._raw: list[bytes] = []  # the payloads of the frame being gathered, joined
        self._raw_bytes = 0
        self._tagged = _Tagged(self._tags)
        self._thread = threading.Thread(target=self._write, name="rebuild-forward", daemon=True)
        self._thread.start()
        self._queue.put(_frame(msgspec.msgpack.encode(job)))

    def records(self, records: Iterable[Decoded]) -> Iterator[Decoded]:
        """``records``, each passed on, those the job folds forwarded too (as
        ``fold_fast(..., away=self)`` forwards them)."""
        wants, send = self.wants, self.send
        for rec in records:
            if wants(type(rec.event)):
                send(rec)
            yield rec

    def payloads(self, decode: RunDecode) -> RunDecode:
        """``decode`` (a run decoder of this process's projections) passing on each
        run's records and forwarding, as they were read, the payloads of those the job
        folds, a run at a time (``ocb_events.segments.read_runs`` gives payloads of
        immutable bytes)."""

        def run(views: list[memoryview], offsets: Sequence[int], segment: str) -> list[Any]:
            records = list(decode(views, offsets, segment))  # (a run is a few hundred)
            tagged = self._tagged
            picked = [v for v, r in zip(views, records, strict=True) if tagged[type(r.event)]]
            if picked:
                self._send_payloads(picked)
            return records

        return run

    def send_payload(self, payload: memoryview) -> None:
        """Forward one record as its payload (one the job folds)."""
        self._send_payloads([payload])

    def _send_payloads(self, payloads: list[memoryview]) -> None:
        if self._n:
            self._flush()  # the records before them first
        self._lengths.extend(map(len, payloads))
        joined = b"".join(payloads)
        self._raw.append(joined)
        self._raw_bytes += len(joined)
        if self._raw_bytes >= FRAME_BYTES:
            self._flush_payloads()

    def _flush_payloads(self) -> None:
        n = len(self._lengths)
        if n:
            size = 1 + _COUNT.size + 4 * n + self._raw_bytes
            head = _LENGTH.pack(size) + bytes((_PAYLOADS,)) + _COUNT.pack(n)
            # one write a frame: the writing thread takes the GIL back once a write
            self._queue.put(b"".join([head, self._lengths.tobytes(), *self._raw]))
            self.count += n
            self._lengths, self._raw, self._raw_bytes = array("I"), [], 0

    def wants(self, kind: type) -> bool:
        """Whether records of ``kind`` are forwarded."""
        k = self._kinds.get(kind)
        return bool(self._kind(kind) if k is None else k)

    def send(self, rec: Decoded) -> None:
        """Forward one record (one the job folds: ``wants``)."""
        if self._lengths:
            self._flush_payloads()  # the payloads before it first
        ev: Any = rec.event
        k = self._kinds[type(ev)]
        if k == 1:
            self._encode((1, rec.seq, ev.rule, ev.cause_seq, ev.w), self._buf, -1)
        elif k == 2:
            self._encode((2, rec.seq, ev.updates, ev.baselines), self._buf, -1)
        else:
            self._encode((0, rec), self._buf, -1)
        self._n += 1
        if len(self._buf) >= FRAME_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._n:
            self._queue.put(_sealed(self._buf, self._n))
            self.count += self._n
            self._buf, self._n = bytearray(_HEAD), 0

    def _kind(self, kind: type) -> int:
        """How records of ``kind`` are forwarded: 0 not at all, 1 a packed weight
        update, 2 one in msgpack left raw, 3 decoded."""
        if kind is EdgesPackedRaw:
            k = 1 if "edges_updated" in self._tags else 0
        elif kind is EdgesUpdatedRaw:
            k = 2 if "edges_updated" in self._tags else 0
        elif issubclass(kind, Skipped):
            k = 0
        else:
            k = 3 if getattr(kind, "__struct_config__").tag in self._tags else 0  # noqa: B009
        self._kinds[kind] = k
        return k

    def close(self) -> None:
        """End the stream and wait for the thread to have written it."""
        self._flush()
        self._flush_payloads()
        self._queue.put(_frame(b""))
        self._queue.put(None)
        self._thread.join()

    def _write(self) -> None:
        while (frame := self._queue.get()) is not None:
            if self.error is None:
                try:
                    self._stdin.write(frame)
                except (OSError, ValueError) as exc:  # it stopped reading: drop the rest
                    self.error = f"it stopped reading ({type(exc).__name__})"
        try:
            self._stdin.close()
        except OSError:
            pass


class _Tagged(dict[type, bool]):
    """Whether records of each event kind are among ``tags`` (``_tag``), found once."""

    def __init__(self, tags: frozenset[str]) -> None:
        super().__init__()
        self.tags = tags

    def __missing__(self, kind: type) -> bool:
        wanted = self[kind] = _tag(kind) in self.tags
        return wanted


def _tag(kind: type) -> str:
    """The tag of an event kind as the projections' routes name it (a packed weight
    update is an ``edges_updated``)."""
    tag = str(getattr(kind, "__struct_config__").tag)  # noqa: B009 (not typed as a Struct)
    return "edges_updated" if tag == PACKED_TAG else tag


def _frame(data: bytes) -> bytes:
    return _LENGTH.pack(len(data)) + data


_HEAD = _LENGTH.size + 5
"""The room left at the start of a frame of records: its length, then the header of a
msgpack array (array 32) of its records."""


def _sealed(buf: bytearray, n: int) -> bytearray:
    """``buf`` (records encoded after ``_HEAD`` bytes) as a frame of its ``n`` records,
    in place."""
    _LENGTH.pack_into(buf, 0, len(buf) - _LENGTH.size)
    buf[_LENGTH.size] = 0xDD
    buf[_LENGTH.size + 1 : _HEAD] = n.to_bytes(4, "big")
    return buf


def finish(proc: Child, forward: Forward, names: list[str]) -> Handoff | str:
    """The snapshots of ``names`` the second process handed back, having folded every
    record ``forward`` forwarded, or why it did not (one line)."""
    out, _ = proc.communicate()
    with proc.errors as errors:
        errors.seek(0)
        err = errors.read()
    if proc.returncode != 0:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        return f"it exited with status {proc.returncode}" + (f": {lines[-1]}" if lines else "")
    try:
        got = msgspec.msgpack.decode(out, type=Handoff)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return f"its answer could not be read ({exc})"
    if forward.error is not None:
        return forward.error
    if got.records != forward.count:
        return f"it folded {got.records} records of {forward.count}"
    return got if set(got.snapshots) == set(names) else "it folded other projections"


def main(stream: IO[bytes]) -> bytes:
    """The handoff of the job and the records framed in ``stream``."""
    job = msgspec.msgpack.decode(_read_frame(stream), type=Job)
    states = {n: PROJECTIONS[n].initial() for n in job.names}
    count = [0]
    decode = fold_run_decoder(frozenset().union(*(ROUTES[n] for n in job.names)))
    with no_cycle_collection():
        fold_fast(_received(stream, count, decode), states)
    for state in states.values():
        state.seq = max(state.seq, job.end)
    snapshots = {n: PROJECTIONS[n].snapshot(states[n]) for n in job.names}
    return msgspec.msgpack.encode(Handoff(snapshots, count[0]))


def _read_frame(stream: IO[bytes]) -> bytes:
    head = stream.read(_LENGTH.size)
    if len(head) != _LENGTH.size:
        raise EOFError("the stream of records ended without its last frame")
    (size,) = _LENGTH.unpack(head)
    data = stream.read(size)
    if len(data) != size:
        raise EOFError("the stream of records ended inside a frame")
    return data


def _received(stream: IO[bytes], count: list[int], decode: RunDecode) -> Iterator[Any]:
    while data := _read_frame(stream):
        if data[0] == _PAYLOADS:
            views = _payloads(data)
            count[0] += len(views)
            yield from decode(views, [0] * len(views), "(forwarded)")
            continue
        items = _ITEMS.decode(data)
        count[0] += len(items)
        for item in items:
            if isinstance(item, _Packed):
                ev: Any = EdgesPackedRaw(rule=item.rule, cause_seq=item.cause_seq, w=item.w)
                yield FoldPeek(seq=item.seq, ts=0, actor="", event=ev)
            elif isinstance(item, _Raw):
                ev = EdgesUpdatedRaw(updates=item.updates, baselines=item.baselines)
                yield FoldPeek(seq=item.seq, ts=0, actor="", event=ev)
            else:
                yield item.rec


def _payloads(data: bytes) -> list[memoryview]:
    """The payloads of a frame of them (views of ``data``)."""
    (n,) = _COUNT.unpack_from(data, 1)
    at = 1 + _COUNT.size + 4 * n
    lengths = array("I")
    lengths.frombytes(data[1 + _COUNT.size : at])
    if len(lengths) != n or at + sum(lengths) != len(data):
        raise ValueError("a frame of payloads does not add up")
    view, out = memoryview(data), []
    for size in lengths:
        out.append(view[at : at + size])
        at += size
    return out


if __name__ == "__main__":
    sys.stdout.buffer.write(main(sys.stdin.buffer))
