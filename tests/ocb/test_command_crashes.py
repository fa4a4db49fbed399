"""Real ``ocb`` commands SIGKILLed right after their records are committed, while they
fold, snapshot and close: nothing acknowledged is lost, no answer comes from state the
log does not hold, and a retried ``learn`` with its request id counts once."""

from __future__ import annotations

import random
from pathlib import Path

from ocb.brain import Brain
from ocb_events.clock import TickClock
from tests.crash_harness import APPENDING, QUESTION, Harness, Outcome

SEED = 20_261_123
KILLS_AFTER_APPEND = 50


def test_kills_after_the_append_lose_nothing_and_never_answer_wrong(
    tmp_path: Path, workspace: Path
) -> None:
    brain = tmp_path / "brain"
    with Brain.create(brain, clock=TickClock()) as b:
        b.sync(workspace)
        b.set_config("storage.snapshot_tail", 1)  # every command snapshots after its append
        for i in range(3):
            b.query(QUESTION, chat_id=f"c{i}")
        history = list(b.log.read())
    harness = Harness(brain, workspace, random.Random(SEED), history=history)
    outcomes: list[Outcome] = []
    while sum(o.after_append for o in outcomes) < KILLS_AFTER_APPEND and len(outcomes) < 120:
        command = APPENDING[len(outcomes) % len(APPENDING)]
        got = harness.run(command, after_append=True, window_s=0.04)
        outcomes.append(got)
        if command == "learn" and got.killed:
            outcomes.append(harness.retry())
    failed = [(o.command, o.detail) for o in outcomes if not o.survived or o.detail]
    assert failed == []
    assert sum(o.acked_lost for o in outcomes) == 0
    assert sum(o.silent_wrong for o in outcomes) == 0
    assert sum(o.after_append for o in outcomes) >= KILLS_AFTER_APPEND
