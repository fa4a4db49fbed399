"""Storing a sealed segment compressed without training its dictionaries on the append
that fills it.

A segment the writer seals is stored compressed (``ocb_events.blocks``) with two
dictionaries trained on the light frames and bodies of the segment before it (the
first segment of a log: on its own). Those are trained in a thread as soon as that
segment is sealed (zstd lets go of the GIL while it trains), so the append that fills
the next segment only splits and compresses it: on the 1M ``pg`` mix ~0.6 s, where
training its own took ~1.5 s. A neighbour's dictionaries cost 0.4-1.5 % more bytes
than the segment's own. They depend only on the segment before, so a log is stored
the same way whether its writer trained them ahead or at the seal (the first seal of
a process reads the segment before and trains then).

``ocb verify --rewrite`` (``ocb_events.recode``) trains every segment's own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from ocb_events.blocks import Dicts, Samples, samples, train
from ocb_events.errors import LogCorrupt
from ocb_events.marks import Seal, write_seals
from ocb_events.rewrite import seal_of, split_segment, store_compressed
from ocb_events.segments import Segment

Offsets = Callable[[Segment], Sequence[int]]


class _Ahead:
    """The dictionaries being trained, in a thread, on the samples of one segment."""

    def __init__(self, first_seq: int, got: Samples) -> None:
        self.first_seq = first_seq
        self._dicts: Dicts = (None, None)
        self._done = threading.Event()
        threading.Thread(
            target=self._train, args=(got,), name="segment-dictionaries", daemon=True
        ).start()

    def _train(self, got: Samples) -> None:
        try:
            self._dicts = train(got)
        finally:
            self._done.set()

    def result(self) -> Dicts:
        self._done.wait()
        return self._dicts


class Sealer:
    """Stores a log's sealed segments compressed, one after the other (its writer's)."""

    def __init__(self) -> None:
        self._ahead: _Ahead | None = None

    def compress(
        self, directory: Path, sealed: Sequence[Segment], seals: dict[int, Seal], offsets: Offsets
    ) -> None:
        """Store the last of the ``sealed`` segments compressed and seal it again (in
        ``seals`` and on disk), and start training the dictionaries of the next one on
        it. A failure leaves it plain, which reads the same (a seal that no longer
        matches only makes the next open verify the segment)."""
        *before, seg = sealed
        try:
            parts = split_segment(seg, offsets(seg))
            if parts is None:
                return
            dicts = self._dicts_after(before[-1], offsets) if before else None
            self._ahead = _Ahead(seg.first_seq, samples(parts))
            if not store_compressed(seg, parts, dicts or self._ahead.result()):
                return
            old = seals[seg.first_seq]
            seals[seg.first_seq] = seal_of(
                seg.path, old.first_seq, old.last_seq, old.last_ts, old.chain
            )
            write_seals(directory, seals)
        except OSError:
            pass

    def _dicts_after(self, prev: Segment, offsets: Offsets) -> Dicts | None:
        """The dictionaries trained on ``prev`` (the segment before), or None when it
        gives none (too small, or unreadable): the segment then trains its own."""
        ahead = self._ahead
        if ahead is not None and ahead.first_seq == prev.first_seq:
            dicts = ahead.result()
        else:
            try:
                parts = split_segment(prev, offsets(prev), stored=True)
            except (OSError, LogCorrupt, ValueError):
                return None
            dicts = train(samples(parts)) if parts is not None else (None, None)
        return None if None in dicts else dicts
