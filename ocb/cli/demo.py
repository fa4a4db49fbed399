"""The demo: the whole loop on a workspace, narrated."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from ocb.brain import Brain
from ocb.cli.render.doctor import doctor_text
from ocb.cli.render.graph import inject_text, learn_text, sync_text

QUESTION = "how do I roll back a bad deploy"
HOTFIX = "can we skip CI for an urgent hotfix"
ROUNDS = 12
STALE = "memory/2026-11-10.md"
FIX = "Never skip CI for hotfixes"


def _ask(b: Brain, question: str, say: Callable[[str], None], chat_id: str = "") -> list[str]:
    answer = b.query(question, top=3, chat_id=chat_id)
    say(f'$ ocb query "{question}"')
    say(f"  trace {answer.trace_id}: {len(answer.fired)} nodes fired, {answer.context_chars} chars")
    for h in answer.results:
        say(f"  {h.score:.3f}  {h.source}")
    return answer.fired


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
            say(sync_text(report) + "\n")
            first = _ask(b, QUESTION, say)
            say(f"\n$ ocb learn --outcome 1    # {ROUNDS} times, each on a new trace of it")
            for _ in range(ROUNDS):
                report_l = b.learn(1.0, trace_id=b.query(QUESTION).trace_id)
            say(learn_text(report_l) + "\n")
            after = _ask(b, QUESTION, say)
            say(f"  the route compiled: {len(first)} -> {len(after)} nodes fired\n")
            fired = _ask(b, HOTFIX, say, chat_id="demo")
            stale = next((n for n in fired if n.startswith(STALE)), fired[0])
            say(f"  {stale} is the withdrawn advice; correct it:")
            say(f'\n$ ocb inject --type CORRECTION --content "{FIX}" \\')
            say(f"      --chat-id demo --target {stale}")
            say(inject_text(b.inject("CORRECTION", FIX, chat_id="demo", targets=[stale])) + "\n")
            fixed = _ask(b, HOTFIX, say)
            verdict = "still fires" if stale in fixed else "no longer fires"
            say(f"  {stale} {verdict} for this question")
        say(f"\n$ ocb doctor --brain {brain_dir}")
        say(doctor_text(Brain.doctor_at(brain_dir)[0]))
        if tmp is None:
            say(f"\nthe brain stays in {brain_dir}; its whole history, as JSON lines:")
            say(f"$ ocb events --brain {brain_dir} --since 0")
        else:
            say("\nthe demo brain lived in a temporary directory and is now removed;")
            say(f"keep one to explore with: ocb demo --workspace {workspace} --brain DIR")
    finally:
        if tmp is not None:
            tmp.cleanup()
