"""The demo: the whole loop on a workspace, narrated."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from ocb.api import Brain
from ocb.doctor import run_doctor
from ocb.render import doctor_text, inject_text, learn_text, sync_text

QUESTION = "how do I roll back a bad deploy"
ROUNDS = 6


def run_demo(workspace: Path, brain_dir: Path | None, say: Callable[[str], None]) -> None:
    """Index ``workspace``, ask, reinforce, correct and check a brain, printing each step."""
    tmp = None
    if brain_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="ocb-demo-")
        brain_dir = Path(tmp.name) / "brain"
    try:
        b, report = Brain.init(brain_dir, workspace)
        with b:
            say(f"$ ocb init --workspace {workspace} --brain {brain_dir}")
            say(sync_text(report))
            first = b.query(QUESTION, top=5, chat_id="demo")
            say(f'\n$ ocb query "{QUESTION}"  ->  {len(first.fired)} nodes fired, {first.context_chars} chars')
            for h in first.results[:3]:
                say(f"   {h.score:.3f}  {h.source}")
            say(f"\n$ ocb learn --outcome 1   (x{ROUNDS}, each on a fresh trace of the same question)")
            for _ in range(ROUNDS):
                a = b.query(QUESTION, top=5, chat_id="demo")
                report = b.learn(1.0, trace_id=a.trace_id)
            say(learn_text(report))
            after = b.query(QUESTION, top=5, chat_id="demo")
            say(f"   now {len(after.fired)} nodes fire (was {len(first.fired)}), {after.context_chars} chars")
            say('\n$ ocb inject --type CORRECTION --content "Never skip CI for hotfixes" --chat-id demo')
            say(inject_text(b.inject("CORRECTION", "Never skip CI for hotfixes", chat_id="demo")))
            fixed = b.query(QUESTION, top=5)
            say(f"   the question now fires: {', '.join(fixed.fired[:5])}")
        say(f"\n$ ocb doctor --brain {brain_dir}")
        say(doctor_text(run_doctor(brain_dir)))
        say(f"\n$ ocb events --brain {brain_dir} --since 0   # the whole history, as JSON lines")
    finally:
        if tmp is not None:
            tmp.cleanup()
