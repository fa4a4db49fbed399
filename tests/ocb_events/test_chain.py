"""The hash chain: each record's chain names the exact history up to it, the same in
the in-memory reference log and on disk; a log of the old format gains it on upgrade."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from ocb_events.clock import TickClock
from ocb_events.frames import V2, ZERO_CHAIN, digest, frame_header, link, scan_offsets
from ocb_events.log import SegmentLog, verify_log
from ocb_events.memory import MemoryLog
from ocb_events.schema import Event
from tests.ocb_events.golden_log import GOLDEN, expected_records
from tests.ocb_events.support import config_events
from tests.strategies import event_batches


@given(st.lists(event_batches, min_size=1, max_size=6))
def test_the_segment_log_and_the_memory_log_chain_alike(
    tmp_path_factory: pytest.TempPathFactory, batches: list[list[Event]]
) -> None:
    directory = tmp_path_factory.mktemp("chain") / "log"
    mem = MemoryLog(clock=TickClock())
    with SegmentLog(directory, clock=TickClock(), segment_bytes=700) as disk:
        for batch in batches:
            assert disk.append(batch, actor="t") == mem.append(batch, actor="t")
        chains = [disk.chain_of(s) for s in range(disk.last_seq + 1)]
    assert chains == [mem.chain_of(s) for s in range(mem.last_seq + 1)]
    assert chains[0] == ZERO_CHAIN and len(set(chains)) == len(chains)
    with SegmentLog(directory, writer=False) as again:
        assert [again.chain_of(s) for s in range(again.last_seq + 1)] == chains


def test_histories_that_differ_once_differ_in_every_chain_after(tmp_path: Path) -> None:
    a, b = MemoryLog(clock=TickClock()), MemoryLog(clock=TickClock())
    for i in range(8):
        a.append(config_events(2, f"x{i}-"), actor="t")
        b.append(config_events(2, f"x{i}-" if i != 3 else "other-"), actor="t")
    same = [a.chain_of(s) == b.chain_of(s) for s in range(a.last_seq + 1)]
    assert same == [True] * 7 + [False] * 10, "records 7 and 8 differ, and so all after"


def test_an_old_format_log_is_upgraded_by_its_first_writer(tmp_path: Path) -> None:
    with SegmentLog(GOLDEN, writer=False) as reader:
        assert reader.chain_of(reader.last_seq) is None, "the old format carries no chain"
    copy = tmp_path / "log"
    shutil.copytree(GOLDEN, copy)
    with SegmentLog(copy, clock=TickClock(start_ns=0)) as log:
        assert list(log.read()) == expected_records(), "the records keep their bytes"
        chains = [log.chain_of(s) for s in range(1, log.last_seq + 1)]
    want, chain = [], ZERO_CHAIN
    for seg in sorted(GOLDEN.glob("*.seg")):
        data = seg.read_bytes()
        for off in scan_offsets(seg, int(seg.name[:-4]), V2):
            info = frame_header(data, off, len(data), V2)
            assert info is not None
            payload = data[off + V2.frame_size : info.end]
            chain = link(chain, info.seq, info.ts, digest(payload))
            want.append(chain)
    assert chains == want, "chained over the bytes the records were stored as"
    assert all(r.chained for r in verify_log(copy))
    assert all(p.read_bytes()[:8] == b"OCBSEG03" for p in copy.glob("*.seg"))
