"""Claims are not facts: what an assistant said is retained with its provenance (in the
bullet, so a rebuild from the workspace keeps it) and a lower confidence, ranks below
the workspace's evidence in query and recall until an outcome of a judge or a fact of
the user confirms it, and ``retract --fact`` takes it out of the workspace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ocb.brain import Brain
from ocb_events.clock import TickClock
from tests.ocb.daemon.support import DEADLINE, ROOT, env

QUESTION = "why did the 3.15.2 hotfix deploy fail"
INVENTED = "the 3.15.2 hotfix deploy failed because of a rate limit error"


def _said(brain: Brain, speaker: str = "assistant") -> str:
    got = brain.retain(INVENTED, kind="B", speaker=speaker, session="agent:main:x y", turn=3)
    return got.fact_id


def _cited(brain: Brain, fid: str) -> str:
    """The fact's lines as a query result cites them."""
    f = brain.state("memory").facts[fid]
    return f"{f.path}#L{f.start_line}-L{f.end_line}"


def _rank(brain: Brain, fact_source: str, top: int = 5) -> tuple[int | None, bool]:
    """Where the claim's line stands among a query's results (None: not there), and
    whether it is marked as a claim."""
    answer = brain.query(QUESTION, top=top)
    for i, h in enumerate(answer.results):
        if h.source == fact_source:
            return i, h.claim
    return None, False


def test_an_assistants_fact_is_a_claim_with_its_provenance(
    brain: Brain, workspace: Path, tmp_path: Path
) -> None:
    fid = _said(brain)
    fact = brain.state("memory").facts[fid]
    text = (workspace / fact.path).read_text()
    assert f"- B(by=assistant, session=agent:main:x%20y, turn=3): {INVENTED}\n" in text
    assert (fact.speaker, fact.session, fact.turn, fact.confidence) == (
        "assistant", "agent:main:x y", 3, 0.3,
    )  # fmt: skip
    item = next(i for i in brain.recall(INVENTED, k=500, max_chars=10**6).results if i.id == fid)
    assert item.claim and item.confidence == 0.3 and item.speaker == "assistant"
    rebuilt, _ = Brain.init(tmp_path / "again", workspace)  # from the Markdown alone
    with rebuilt:
        again = next(f for f in rebuilt.state("memory").facts.values() if f.content == INVENTED)
        assert (again.speaker, again.session, again.turn) == ("assistant", "agent:main:x y", 3)
        assert [c.content for c in rebuilt.state("memory").claims()] == [INVENTED]


def test_a_claim_ranks_below_the_workspaces_evidence(built: Path, tmp_path: Path) -> None:
    clock = TickClock(start_ns=1_800_000_000_000_000_000)
    with Brain(built, clock=clock) as b:  # as capture stored it before: a plain fact
        fid = _said(b, speaker="user")
        source = _cited(b, fid)
        assert _rank(b, source) == (0, False), "a guess stored as a fact comes first"
        b.retract_fact(fid)
        fid = _said(b)
        source = _cited(b, fid)
        assert _rank(b, source) == (None, False), "not in the top 5"
        at, marked = _rank(b, source, top=50)
        answer = b.query(QUESTION, top=50)
        assert at == len(answer.results) - 1 and marked, "last, and said to be a claim"
        recalled = b.recall("hotfix deploy rate limit error", k=500, max_chars=10**6).results
        assert recalled[-1].id == fid and recalled[-1].claim
        assert not any(i.claim for i in recalled[:-1])


def test_a_judges_outcome_confirms_a_claim_and_its_retraction_takes_it_back(
    brain: Brain,
) -> None:
    fid = _said(brain)
    source = _cited(brain, fid)
    answer = brain.query(QUESTION, top=50)
    assert answer.results[-1].source == source and answer.results[-1].fired
    own = brain.learn(1.0, trace_id=answer.trace_id, cited=[source], source="self")
    assert own.used and own.confirmed == [], "an agent's own success confirms nothing"
    judged = brain.learn(1.0, trace_id=answer.trace_id, cited=[source], source="human")
    assert judged.confirmed == [fid]
    assert [c.id for c in brain.state("memory").claims()] == []
    assert _rank(brain, source) == (0, False), "confirmed: evidence like any other"
    brain.retract(seq=judged.outcome_seq)
    assert [c.id for c in brain.state("memory").claims()] == [fid]
    at, marked = _rank(brain, source)
    assert at in (None, 4) and (at is None or marked), "a claim again: after the evidence"


def test_a_fact_of_the_user_saying_the_same_confirms_a_claim(brain: Brain) -> None:
    fid = _said(brain)
    again = _said(brain)  # the assistant saying it again adds nothing
    assert again == fid and len(brain.state("memory").claims()) == 1
    got = brain.retain(INVENTED, kind="W")
    assert got.created and got.confirmed == [fid]
    assert brain.state("memory").claims() == []


def test_retract_fact_takes_a_claim_out_of_the_workspace(built: Path, workspace: Path) -> None:
    with Brain(built, clock=TickClock(start_ns=1_800_000_000_000_000_000)) as b:
        fid = _said(b)
        path = workspace / b.state("memory").facts[fid].path
    argv = [sys.executable, "-m", "ocb.entry", "retract", "--brain", str(built), "--fact", fid,
            "--json"]  # fmt: skip
    proc = subprocess.run(
        argv, env=env(), capture_output=True, text=True, timeout=DEADLINE, cwd=str(ROOT)
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert (got["fact"], got["speaker"], got["written"]) == (fid, "assistant", True)
    assert INVENTED not in path.read_text() and "## Retain" in path.read_text()
    with Brain(built) as b:
        assert b.state("memory").active(fid) is None and b.state("memory").claims() == []
    proc = subprocess.run(
        argv, env=env(), capture_output=True, text=True, timeout=DEADLINE, cwd=str(ROOT)
    )
    assert proc.returncode == 1 and proc.stderr.startswith(f"error: unknown fact '{fid}'")


def test_retract_fact_never_writes_through_a_link_out_of_the_workspace(
    built: Path, workspace: Path, tmp_path: Path
) -> None:
    with Brain(built, clock=TickClock(start_ns=1_800_000_000_000_000_000)) as b:
        fid = _said(b)
        rel = b.state("memory").facts[fid].path
    outside = tmp_path / "outside.md"
    outside.write_text((workspace / rel).read_text())  # the same lines, so they match
    before = outside.read_text()
    (workspace / rel).unlink()
    (workspace / rel).symlink_to(outside)
    argv = [sys.executable, "-m", "ocb.entry", "retract", "--brain", str(built), "--fact", fid]
    proc = subprocess.run(
        argv, env=env(), capture_output=True, text=True, timeout=DEADLINE, cwd=str(ROOT)
    )
    assert proc.returncode == 1 and proc.stderr.startswith("error: "), proc.stderr
    assert outside.read_text() == before and (workspace / rel).is_symlink()
    with Brain(built) as b:
        assert b.state("memory").active(fid) is not None  # nothing recorded
