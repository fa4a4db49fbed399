"""A correction on the command line, end to end: ``ocb query`` in a chat, ``ocb inject``
a correction that says what to do instead, then ``ocb query`` again: the withdrawn note
is vetoed, the runbook that says what to do instead is not, and the correction stays out
of a question it is not about."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.ocb.cli.support import ocb

RUNBOOK = """# Thumbnails runbook

`thumbd` is the worker that resizes uploaded survey images into thumbnails. It consumes
the `thumbnails` queue on Redis. Owner: @Sam.

## When thumbd falls behind

Symptoms: the `thumbnails` queue grows past 2,000 jobs and the web app shows grey
placeholders instead of thumbnails.

1. Check that the thumbd pods are not crash-looping.
2. Scale the worker: `kubectl --context lumen-prod -n lumen scale deploy/thumbd --replicas=8`.
"""
NOTE = """# 2026-11-21

## Thumbnail backlog

The Monday campaign uploaded far more images than usual and thumbd fell behind for about
an hour. @Marco's suggestion for next time: when thumbd falls behind, resize images in the
API pods directly, so the user gets a thumbnail in the upload response.

## Retain

- O(c=0.5) @Marco: when thumbd falls behind, resize images in the API pods directly.
"""
QUESTION = "thumbd falls behind, what do I do"
FIX = "Never resize images in the API pods, even when thumbd falls behind; scale thumbd instead"


def _query(brain: Path, question: str, *args: str) -> dict[str, Any]:
    code, out, err = ocb("query", question, "--brain", brain, "--top", "10", "--json", *args)
    assert (code, err) == (0, "")
    got: dict[str, Any] = json.loads(out)
    return got


def test_a_correction_that_says_what_to_do_instead_vetoes_only_the_withdrawn_note(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "runbooks" / "thumbnails.md").write_text(RUNBOOK)
    (workspace / "memory" / "2026-11-21.md").write_text(NOTE)
    brain = tmp_path / "brain"
    assert ocb("init", "--workspace", workspace, "--brain", brain)[0] == 0
    first = _query(brain, QUESTION, "--chat-id", "c1")
    runbook = "runbooks/thumbnails.md::1"
    notes = {f for f in first["fired"] if f.startswith("memory/2026-11-21.md")}
    assert runbook in first["fired"] and notes
    code, out, _ = ocb(
        "inject", "--brain", brain, "--type", "CORRECTION", "--content", FIX,
        "--chat-id", "c1", "--json",
    )  # fmt: skip
    got = json.loads(out)
    assert code == 0 and got["selection"] == "content"
    assert {c["id"] for c in got["vetoed"]} == notes  # the advice to resize in the API pods
    assert runbook in {c["id"] for c in got["spared"]}  # "scale thumbd instead" says it
    again = _query(brain, QUESTION)
    assert again["results"][0]["id"] == got["node_id"]  # the correction fires first
    assert runbook in again["fired"] and not notes & set(again["fired"])
    other = _query(brain, "image workers are overwhelmed")  # not what it corrects
    shown = set(other["fired"]) | {h["id"] for h in other["results"]}
    assert got["node_id"] not in shown
