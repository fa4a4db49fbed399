"""Crash safety: a writer process is SIGKILLed at random moments while it appends.

Each trial reuses one directory for a few writer runs. After every kill the parent
reopens the log as the writer and checks that every acknowledged append survived,
that seqs are gap-free, that no batch is partly present, and that appends go on.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ocb_events.log import SegmentLog, verify_log
from ocb_events.schema import ConfigChanged, Record

TRIALS = 50
RUNS_PER_TRIAL = 2
SEED = 20_260_101
REPO = Path(__file__).resolve().parents[2]

# Appends batches of 1-3 events forever, printing the last seq of each append once
# it has returned. Every event's key names its run, batch, index and batch size.
# Some batches carry a large value so that a kill can land inside a write().
CHILD_SCRIPT = """
import random, sys
from pathlib import Path
from ocb_events.log import SegmentLog
from ocb_events.schema import ConfigChanged

directory, run, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
log = SegmentLog(directory, durability="batch", segment_bytes=256 * 1024)
out = sys.stdout
out.write(f"open {log.last_seq}\\n")
out.flush()
for batch in range(1_000_000):
    size = rng.randint(1, 3)
    pad = "x" * rng.choice((0, 0, 0, 100, 150_000))
    events = [ConfigChanged(key=f"{run}:{batch}:{i}:{size}", value=pad) for i in range(size)]
    recs = log.append(events, actor="child")
    out.write(f"{recs[-1].seq}\\n")
    out.flush()
"""


def _env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": str(REPO) + (os.pathsep + path if path else "")}


@dataclass
class Kill:
    """What one writer run told the parent before it died."""

    opened_at: int
    acked: list[int]


def _run_and_kill(directory: Path, run: int, rng: random.Random) -> Kill:
    """Start a writer, wait for 1..40 acknowledged appends (and sometimes a moment
    more), SIGKILL it, and collect every acknowledgement it printed."""
    wait_for = rng.randint(1, 40)
    extra_delay = rng.random() * 0.003 if rng.random() < 0.3 else 0.0
    args = [sys.executable, "-c", CHILD_SCRIPT, str(directory), str(run), str(rng.randrange(2**32))]
    with subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()
    ) as proc:
        assert proc.stdout is not None
        try:
            first = proc.stdout.readline()
            lines = [proc.stdout.readline() for _ in range(wait_for)]
            if extra_delay:
                time.sleep(extra_delay)  # let the kill land somewhere else in the loop
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            # the rest from the same reader: ``communicate`` would read the pipe itself
            # and miss what ``readline`` had read ahead, starting at any place in a line
            rest = proc.stdout.read()
            _, err = proc.communicate(timeout=30)
    assert first.startswith("open "), f"the writer failed to start: {first!r} {err}"
    assert proc.returncode == -signal.SIGKILL, f"the writer died on its own: {err}"
    # A line without its newline was cut by the kill: it does not count.
    complete = [ln for ln in lines if ln.endswith("\n")] + rest.splitlines(keepends=True)
    acked = [int(ln) for ln in complete if ln.endswith("\n")]
    assert len(acked) >= wait_for
    return Kill(int(first.split()[1]), acked)


def _parse(rec: Record) -> tuple[int, int, int, int]:
    assert isinstance(rec.event, ConfigChanged)
    run, batch, index, size = (int(x) for x in rec.event.key.split(":"))
    return run, batch, index, size


def _check_batches(records: list[Record]) -> None:
    """Every batch of every run is whole, in order, in one contiguous run of seqs
    sharing one ts; each run's batches are numbered 0, 1, 2 ... without a hole."""
    batches: dict[tuple[int, int], list[Record]] = defaultdict(list)
    order: list[tuple[int, int]] = []
    for rec in records:
        if rec.actor != "child":
            continue
        run, batch, _, _ = _parse(rec)
        if (run, batch) not in batches:
            order.append((run, batch))
        batches[(run, batch)].append(rec)
    for key, recs in batches.items():
        size = _parse(recs[0])[3]
        assert [_parse(r)[2:] for r in recs] == [(i, size) for i in range(size)], key
        assert [r.seq for r in recs] == list(range(recs[0].seq, recs[0].seq + size)), key
        assert len({r.ts for r in recs}) == 1, key
    runs: dict[int, list[int]] = defaultdict(list)
    for run, batch in order:
        runs[run].append(batch)
    for run, numbers in runs.items():
        assert numbers == list(range(len(numbers))), f"run {run} lost a batch"
    assert sorted(runs) == list(runs), "runs appear in order"


def _check_after_kill(directory: Path, kill: Kill, before: list[Record], run: int) -> list[Record]:
    with SegmentLog(directory) as log:
        records = list(log.read())
        assert [r.seq for r in records] == list(range(1, len(records) + 1))
        assert log.last_seq == len(records)
        assert kill.opened_at == len(before), "the writer opened where the last check ended"
        assert records[: len(before)] == before, "acknowledged history never changes"
        assert not kill.acked or max(kill.acked) <= log.last_seq, "an acknowledged append was lost"
        assert kill.acked == sorted(kill.acked)
        assert all(a in {r.seq for r in records} for a in kill.acked)
        assert all(a.ts <= b.ts for a, b in zip(records, records[1:], strict=False))
        _check_batches(records)
        after = log.append([ConfigChanged(key=f"check:{run}", value=run)], actor="check")
        assert after[0].seq == len(records) + 1
        records.extend(after)
    reports = verify_log(directory)
    assert reports[-1].last_seq == len(records)
    return records


def test_kill_at_random_moments_loses_nothing_acknowledged(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    torn = 0
    for trial in range(TRIALS):
        directory = tmp_path / f"trial-{trial}"
        history: list[Record] = []
        for run in range(RUNS_PER_TRIAL):
            kill = _run_and_kill(directory, run, rng)
            with SegmentLog(directory, writer=False) as reader:  # before any repair
                seen = list(reader.read())
                torn += reader.recovery is not None
            history = _check_after_kill(directory, kill, history, run)
            assert seen == history[:-1], "a reader sees what the repairing writer keeps"
        for seg in directory.glob("*.seg"):
            seg.unlink()  # keep the disk footprint small
    if os.environ.get("OCB_CRASH_STATS"):
        print(f"\n{TRIALS * RUNS_PER_TRIAL} kills, {torn} left a torn tail")
