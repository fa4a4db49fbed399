"""Warming a brain from an agent's transcripts: each answered turn recorded once as its
query with the outcome its evidence gives (used, corrected, missed or none), the
corrections asked for, a transcript read again or grown, copies, dry runs, and a warm
killed at random points and run again."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from ocb.brain import Brain
from ocb.graph.warm import warmed
from ocb_events.clock import TickClock
from ocb_events.schema import NodeInjected, OutcomeRecorded, QueryTraced, TurnWarmed
from tests.ocb.cli.support import log_bytes
from tests.ocb.daemon.support import env
from tests.ocb.graph.sessions import QUESTIONS, Exchange, memory_get, write_flat, write_session
from tests.waiting import wait_for

WRONG = "No, that's wrong: roll back with helm to the last good revision, never kubectl."


def fired(b: Brain, question: str) -> list[str]:
    """The chunks a question fires now (nothing recorded)."""
    return [n for n in b.query(question, record=False).fired if b.graph.nodes[n].kind == "chunk"]


def events(b: Brain, since: int = 0) -> list[Any]:
    return [r.event for r in b.events(since=since)]


def citing(b: Brain, question: str, pick: int = 0) -> Exchange:
    """The question, answered citing the ``pick``-th chunk it fires."""
    node = b.graph.nodes[fired(b, question)[pick]]
    return Exchange(question, f"From the notes: see {node.source}.")


# --------------------------------------------------------------------------- outcomes


def test_a_cited_chunk_is_used_and_the_next_ask_fires_it(brain: Brain, tmp_path: Path) -> None:
    q = QUESTIONS[0]
    chunk = fired(brain, q)[1]
    x = Exchange(q, f"Use helm rollback ({brain.graph.nodes[chunk].source}).")
    seq = brain.log.last_seq
    report = brain.warm_sessions([write_session(tmp_path / "s.jsonl", [x])])
    assert (report.queries, report.used, report.first_seq) == (1, 1, seq + 1)
    got = events(brain, seq)
    assert [type(e).__name__ for e in got] == [
        "QueryTraced", "OutcomeRecorded", "RouteUpdated", "TurnWarmed",
    ]  # fmt: skip
    trace, outcome, _, mark = got
    assert outcome.trace_id == trace.trace_id == mark.trace_id == f"t{seq + 1}"
    assert (outcome.reward, outcome.source, outcome.used) == (1.0, "harvester", (chunk,))
    assert outcome.cited == (brain.graph.nodes[chunk].source,)
    assert brain.query(q, record=False).fired == [chunk]  # warm before the first live ask
    assert all(r.actor == "cli" for r in brain.events(since=seq))


def test_a_quote_or_a_memory_get_read_is_evidence_too(brain: Brain, tmp_path: Path) -> None:
    q1, q2 = QUESTIONS[1], QUESTIONS[2]
    quoted = brain.graph.nodes[fired(brain, q1)[0]]
    words = quoted.text.split()
    read = brain.graph.nodes[fired(brain, q2)[1]]
    lines = [
        Exchange(q1, "As the notes put it: " + " ".join(words[:12])),
        Exchange(q2, "Done as the runbook says.", [
            memory_get(read.path, read.start_line, read.start_line, "a line"),
        ]),
    ]  # fmt: skip
    seq = brain.log.last_seq
    brain.warm_sessions([write_flat(tmp_path / "f.jsonl", lines)])
    outcomes = [e for e in events(brain, seq) if isinstance(e, OutcomeRecorded)]
    assert [o.used for o in outcomes] == [(quoted.id,), (read.id,)]


def test_a_correction_is_negative_and_with_corrections_a_correction_node(
    brain: Brain, tmp_path: Path
) -> None:
    q = QUESTIONS[0]
    session = [Exchange(q, "Use kubectl rollout undo."), Exchange(WRONG)]
    path = write_session(tmp_path / "s.jsonl", session)
    shutil.copytree(brain.path, tmp_path / "copy")
    seq = brain.log.last_seq
    report = brain.warm_sessions([path])
    assert (report.corrected, report.candidates, report.corrections) == (1, 1, 0)
    outcome = next(e for e in events(brain, seq) if isinstance(e, OutcomeRecorded))
    assert (outcome.reward, outcome.used) == (-1.0, ())
    assert not any(isinstance(e, NodeInjected) for e in events(brain, seq))
    with Brain(tmp_path / "copy", clock=TickClock(start_ns=10**18)) as other:
        report = other.warm_sessions([path], corrections=True)
        assert (report.corrected, report.corrections) == (1, 1)
        node = next(e for e in events(other, seq) if isinstance(e, NodeInjected))
        assert (node.node_type, node.content, node.anchor_query) == ("CORRECTION", WRONG, q)
        assert node.trace_id == f"t{seq + 1}"
        assert other.query(q, record=False).results[0].id == node.node_id


def test_cited_lines_no_fired_chunk_holds_are_missed_and_no_evidence_no_outcome(
    brain: Brain, tmp_path: Path
) -> None:
    q = QUESTIONS[3]
    elsewhere = next(
        n for n in sorted(brain.graph.nodes)
        if brain.graph.nodes[n].kind == "chunk" and n not in fired(brain, q)
    )  # fmt: skip
    session = [
        Exchange(q, f"See {brain.graph.nodes[elsewhere].source}."),
        Exchange(QUESTIONS[4], "I would ask the team."),
        Exchange(QUESTIONS[5], "See outside/unknown.md#L3."),
    ]
    seq = brain.log.last_seq
    report = brain.warm_sessions([write_session(tmp_path / "s.jsonl", session)])
    assert (report.queries, report.missed, report.unscored, report.used) == (3, 1, 2, 0)
    got = events(brain, seq)
    outcomes = [e for e in got if isinstance(e, OutcomeRecorded)]
    assert [(o.reward, o.trace_id) for o in outcomes] == [(-1.0, f"t{seq + 1}")]
    assert sum(isinstance(e, TurnWarmed) for e in got) == 3


# --------------------------------------------------------------------------- once


def test_a_transcript_read_again_records_nothing_and_a_copy_is_known(
    brain: Brain, tmp_path: Path
) -> None:
    path = write_session(tmp_path / "s.jsonl", [citing(brain, q) for q in QUESTIONS[:3]])
    assert brain.warm_sessions([path]).queries == 3
    brain.close()
    before = log_bytes(brain.path)
    shutil.copy(path, tmp_path / "moved.jsonl")
    with Brain(brain.path) as again:
        report = again.warm_sessions([path, tmp_path / "moved.jsonl"])
        assert report.queries == 0 and [t.known for t in report.transcripts] == [3, 3]
    assert log_bytes(brain.path) == before


def test_a_grown_transcript_records_only_its_new_turns_and_a_late_correction_once(
    brain: Brain, tmp_path: Path
) -> None:
    first = [citing(brain, QUESTIONS[0]), citing(brain, QUESTIONS[1])]
    path = write_session(tmp_path / "s.jsonl", first)
    brain.warm_sessions([path])
    t2 = next(m.trace_id for m in warmed(brain.store).values() if m.turn == 1)
    # the user then said the second answer was wrong, and asked another question
    grown = [*first, Exchange(WRONG, "Sorry: helm rollback."), citing(brain, QUESTIONS[2])]
    write_session(path, grown)
    seq = brain.log.last_seq
    report = brain.warm_sessions([path])
    assert (report.queries, report.corrected, report.transcripts[0].late) == (2, 1, 1)
    late = [e for e in events(brain, seq) if isinstance(e, OutcomeRecorded) and e.reward < 0]
    assert [o.trace_id for o in late] == [t2]
    assert brain.warm_sessions([path]).queries == 0
    assert brain.warm_sessions([path]).corrected == 0


def test_a_fork_records_only_the_turns_it_does_not_share(brain: Brain, tmp_path: Path) -> None:
    shared = [citing(brain, q) for q in QUESTIONS[:2]]
    brain.warm_sessions([write_session(tmp_path / "a.jsonl", shared, "parent")])
    fork = [*shared, citing(brain, QUESTIONS[3])]
    report = brain.warm_sessions([write_session(tmp_path / "b.jsonl", fork, "child")])
    assert (report.queries, report.transcripts[0].known) == (1, 2)


def test_a_dry_run_records_nothing_and_counts_what_a_warm_records(
    brain: Brain, tmp_path: Path
) -> None:
    session = [citing(brain, q) for q in QUESTIONS[:4]] + [Exchange(WRONG, "ok")]
    path = write_session(tmp_path / "s.jsonl", session)
    brain.close()
    before = log_bytes(brain.path)
    with Brain(brain.path, writer=False) as reader:
        dry = reader.warm_sessions([path], dry_run=True, corrections=True)
    assert log_bytes(brain.path) == before
    with Brain(brain.path) as b:
        real = b.warm_sessions([path], corrections=True)
    for field in ("queries", "used", "corrected", "missed", "unscored", "candidates"):
        assert getattr(dry, field) == getattr(real, field), field
    assert dry.dry_run and (dry.first_seq, dry.last_seq) == (0, 0) and real.last_seq > 0


# --------------------------------------------------------------------------- invariants


def _traced(b: Brain) -> Counter[str]:
    return Counter(e.query for e in events(b) if isinstance(e, QueryTraced))


@settings(max_examples=12, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 60), picks=st.lists(st.integers(0, 7), min_size=2, max_size=6))
def test_warming_a_transcript_in_pieces_records_every_turn_once(
    built: Path, tmp_path_factory: Any, cut: int, picks: list[int]
) -> None:
    """Whatever prefix of the file was warmed first, warming all of it after leaves
    each answered turn traced once and marked once, as warming it whole does."""
    tmp = tmp_path_factory.mktemp("pieces")
    shutil.copytree(built, tmp / "b")
    b = Brain(tmp / "b", clock=TickClock(start_ns=10**18))
    session = [Exchange(QUESTIONS[p], f"answer {i}") for i, p in enumerate(picks)]
    session.insert(1, Exchange(WRONG, "noted"))
    full = write_session(tmp / "full.jsonl", session)
    lines = full.read_text().splitlines(keepends=True)
    part = tmp / "s.jsonl"
    part.write_text("".join(lines[: cut % (len(lines) + 1)]))
    b.warm_sessions([part])
    shutil.copy(full, part)
    b.warm_sessions([part])
    b.warm_sessions([part])
    marks = warmed(b.store)
    assert sorted(m.turn for m in marks.values()) == list(range(len(session)))
    assert _traced(b) == Counter(x.question for x in session)
    negative = [e for e in events(b) if isinstance(e, OutcomeRecorded) and e.reward < 0]
    assert len(negative) == 1  # the correction, in whichever run saw it
    b.close()


def test_a_warm_killed_at_random_points_goes_on_and_records_every_turn_once(
    built: Path, tmp_path: Path
) -> None:
    """SIGKILL the real command at random points of its log, run it again each time:
    every turn is traced and marked once, with the decisions of an uninterrupted warm."""
    with Brain(built) as b:
        session = [citing(b, q, i % 3) for i, q in enumerate(QUESTIONS * 25)]
    path = write_session(tmp_path / "s.jsonl", session[:-1] + [Exchange(WRONG, "ok")])
    whole = tmp_path / "whole"
    shutil.copytree(built, whole)
    argv = [sys.executable, "-m", "ocb.entry", "warm", "--sessions", str(path), "--no-daemon"]
    assert subprocess.run([*argv, "--brain", str(whole)], env=env(), capture_output=True,
                          timeout=600).returncode == 0  # fmt: skip
    start = sum(len(v) for v in log_bytes(built).values())
    end = sum(len(v) for v in log_bytes(whole).values())
    rng = random.Random(os.environ.get("OCB_KILL_SEED", "7"))
    kills = 0
    for point in sorted(rng.uniform(0.1, 0.8) for _ in range(3)):
        proc = subprocess.Popen([*argv, "--brain", str(built)], env=env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        goal = start + int(point * (end - start))

        def grown(proc: subprocess.Popen[bytes] = proc, goal: int = goal) -> bool:
            return proc.poll() is not None or sum(map(len, log_bytes(built).values())) >= goal

        wait_for(grown, "the warm to reach its kill point")
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
    assert kills >= 2
    assert subprocess.run([*argv, "--brain", str(built)], env=env(),
                          timeout=600).returncode == 0  # fmt: skip

    def decisions(brain: Path) -> list[tuple[Any, ...]]:
        with Brain(brain, writer=False) as b:
            got: list[tuple[Any, ...]] = []
            for e in events(b):
                if isinstance(e, QueryTraced):
                    got.append(("q", e.query, e.fired))
                elif isinstance(e, OutcomeRecorded):
                    got.append(("o", e.trace_id, e.reward, e.used))
                elif isinstance(e, TurnWarmed):
                    got.append(("m", e.turn, e.chain, e.trace_id))
            return got

    killed, calm = decisions(built), decisions(whole)
    assert Counter(x[1] for x in killed if x[0] == "m") == Counter(range(len(session)))
    assert killed == calm
