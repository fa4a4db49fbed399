"""A frozen log written by the first storage format: it must always decode.

It was written by the first storage format (OCBSEG02, before the hash chain), which
no writer of today produces, so it cannot be regenerated: never change its bytes to
make a decoding change pass, an old brain on a user's disk looks exactly like this
directory.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ocb_events.clock import TickClock
from ocb_events.log import SegmentLog, verify_log
from ocb_events.schema import ConfigChanged, tag_of
from tests.ocb_events.golden_log import GOLDEN, expected_records
from tests.ocb_events.support import V1_TAGS


def _listing(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_golden_log_decodes_to_the_expected_records() -> None:
    before = _listing(GOLDEN)
    with SegmentLog(GOLDEN, writer=False) as log:
        assert log.recovery is None
        assert list(log.read()) == expected_records()
        assert log.last_seq == len(expected_records())
        assert log.last_ts == expected_records()[-1].ts
    assert _listing(GOLDEN) == before, "reading the golden log changes nothing"


def test_golden_log_holds_every_v1_event_type() -> None:
    tags = [tag_of(r.event) for r in expected_records()]
    assert set(tags) == V1_TAGS
    once = {"workspace_attached", "embedder_configured"}  # once per brain by nature
    assert all(tags.count(tag) >= 2 for tag in V1_TAGS - once)


def test_golden_log_verifies() -> None:
    reports = verify_log(GOLDEN)
    assert len(reports) > 1, "the golden log spans several segments"
    assert reports[0].first_seq == 1
    assert reports[-1].last_seq == len(expected_records())
    assert sum(r.records for r in reports) == len(expected_records())


def test_golden_directory_has_only_segments_and_tail() -> None:
    names = sorted(p.name for p in GOLDEN.iterdir())
    assert "LOCK" not in names
    assert names[-1] == "TAIL"
    assert all(n.endswith(".seg") for n in names[:-1])


def test_a_copy_of_the_golden_log_accepts_appends(tmp_path: Path) -> None:
    copy = tmp_path / "log"
    shutil.copytree(GOLDEN, copy)
    expected = expected_records()
    with SegmentLog(copy, clock=TickClock(start_ns=0)) as log:
        assert log.recovery is None
        new = log.append([ConfigChanged(key="after", value=1)], actor="cli")
        assert (new[0].seq, new[0].ts) == (len(expected) + 1, expected[-1].ts)
    with SegmentLog(copy, writer=False) as again:
        assert list(again.read()) == expected + new
