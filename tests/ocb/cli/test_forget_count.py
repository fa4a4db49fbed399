"""``ocb forget`` reports the records its ``content_forgotten`` event lists: those that
held the text and the vector records rewritten to name the vectors embedded again."""

from __future__ import annotations

import json
from pathlib import Path

from ocb.brain import Brain
from ocb_events.schema import ContentForgotten, NodesEmbedded
from tests.ocb.cli.support import ocb


def test_forget_prints_the_records_its_event_lists(cli_brain: Path) -> None:
    text = "roll back first, debug second"
    code, out, _ = ocb("forget", "--brain", cli_brain, "--text", text, "--dry-run", "--json")
    assert code == 0
    held = json.loads(out)["seqs"]
    code, out, _ = ocb("forget", "--brain", cli_brain, "--text", text, "--json")
    assert code == 0
    report = json.loads(out)
    with Brain(cli_brain, writer=False) as b:
        records = {r.seq: r.event for r in b.log.read()}
    event = records[report["recorded"]]
    assert isinstance(event, ContentForgotten) and report["blobs"] >= 1
    assert report["seqs"] == list(event.seqs)
    embedded = [s for s in event.seqs if isinstance(records[s], NodesEmbedded)]
    assert embedded and sorted(held + embedded) == report["seqs"]
