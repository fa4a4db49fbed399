"""Compacting old daily notes: the pure decision (verbatim moves, fixed point, only old
notes and bank pages touched), and on a brain: dry runs, idempotence, the clock,
refusals outside the workspace, ``ocb show --as-of``, identity (facts, chunks, learned
edges, routes) following the moved text, and a kill at every step of a run."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from ocb.brain import Brain
from ocb.cli.app import app
from ocb.engine.routes import live_credits
from ocb.memory.compaction import COMPACTED, Move, daily_day, plan_compaction
from ocb_events.clock import TickClock
from ocb_events.errors import InputError, WorkspaceError
from projections import graph as graph_projection, memory as memory_projection
from replay import rebuild
from tests.ocb.memory.support import LOGS, NOW
from workspace_sync.markdown import split_lines

runner = CliRunner()
OLD = "memory/2026-11-01.md"
PROSE = "memory/2026-10-30.md"
NOTES = {
    **LOGS,
    PROSE: "# 2026-10-30\n\nA long day of planning. Nothing decided.\n\n## Call\n\n"
    "- 10:00 Alice: the billing migration starts in December\n"
    "- 10:01 Peter: I will write the runbook for it\n"
    "  with the rollback steps\n\n## Later\n\n- 16:00 Peter: the runbook draft is in the wiki\n",
    "bank/entities/Peter.md": "# Peter\n\n- W @Peter: sits next to the window\n",
}


def make(tmp_path: Path, files: dict[str, str] = NOTES) -> Path:
    ws = tmp_path / "ws"
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    return ws


def brain(tmp_path: Path, ws: Path) -> Brain:
    b, _ = Brain.init(tmp_path / "brain", ws, clock=TickClock(start_ns=NOW, step_ns=10**9))
    return b


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def ocb(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


# --------------------------------------------------------------------------- the decision


def test_moves_are_verbatim_and_the_note_keeps_a_summary() -> None:
    c = plan_compaction(NOTES, dt.date(2026, 11, 8), as_of=12)
    assert c.notes == (PROSE, OLD)
    after = {e.path: e.after for e in c.edits}
    talk = "bank/conversations/Alice - Peter.md"
    assert sorted(after) == [
        talk,
        "bank/entities/Peter.md",
        "bank/experience.md",
        "bank/world.md",
        PROSE,
        OLD,
    ]
    assert after[PROSE] == (
        "# 2026-10-30\n\n## Summary\n\n- A long day of planning.\n"
        f"- Call: (3 lines moved to {talk})\n"
        "- Later: (1 line moved to bank/entities/Peter.md)\n\n"
        f"{COMPACTED}\n\nThe full text is in the brain's log: `ocb show {PROSE} --as-of 12`.\n"
    )
    # a dialogue stays whole on the page of the conversation
    assert after[talk] == (
        f"# Alice - Peter\n\n## From {PROSE}\n\n"
        "- 10:00 Alice: the billing migration starts in December\n"
        "- 10:01 Peter: I will write the runbook for it\n  with the rollback steps\n"
    )
    # Peter has a page: his Retain fact goes there; the others to their kind's page
    assert after["bank/entities/Peter.md"] == (
        "# Peter\n\n- W @Peter: sits next to the window\n\n"
        f"## From {PROSE}\n\n- 16:00 Peter: the runbook draft is in the wiki\n\n"
        f"## From {OLD}\n\n- W @Peter: Peter owns the billing service\n"
    )
    texts = {**NOTES, **after}
    for m in c.moves:
        (src, a, b), (dst, x, y) = (_span(m.source), _span(m.target))
        assert split_lines(NOTES[src])[a - 1 : b] == split_lines(texts[dst])[x - 1 : y]


def test_a_name_without_a_time_is_someone_only_when_it_has_a_page() -> None:
    note = "# 2026-01-02\n\n- TODO: call the bank\n- Peter: send the runbook\n"
    texts = {"memory/2026-01-02.md": note, "bank/entities/Peter.md": "# Peter\n"}
    c = plan_compaction(texts, dt.date(2026, 2, 1), as_of=1)
    assert c.moves == (Move("memory/2026-01-02.md#L4-L4", "bank/entities/Peter.md#L5-L5"),)
    assert "- TODO: call the bank" in c.edits[-1].after  # summarized, not moved


def _span(source: str) -> tuple[str, int, int]:
    path, lines = source.split("#L")
    a, b = lines.split("-L")
    return path, int(a), int(b)


_LINE = st.sampled_from(
    [
        "- 09:00 Ann: we ship the parser on Friday",
        "- Bob: the parser needs a review",
        "- W @Ann: owns the parser",
        "- B(s=0.9) @Bob @Ann: reviewed the parser together",
        "- O(c=0.7) @Cy: Friday releases are risky",
        "  continued on an indented line",
        "Some prose. With two sentences.",
        "## Retain",
        "## Standup",
        "```",
        "",
    ]
)
_NOTE = st.lists(_LINE, max_size=12).map(lambda ls: "# day\n\n" + "\n".join(ls) + "\n")
_DAYS = st.sampled_from(["2026-01-02", "2026-01-20", "2026-02-03", "2026-03-01"])


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(_DAYS, _NOTE, min_size=1), st.sampled_from(["", "# Ann\n"]))
def test_compaction_is_deterministic_a_fixed_point_and_touches_only_old_notes_and_pages(
    notes: dict[str, str], ann: str
) -> None:
    texts = {f"memory/{d}.md": t for d, t in notes.items()}
    texts["notes/2026-01-01-plan.md"] = "- Ann: not a daily note\n"
    if ann:
        texts["bank/entities/Ann.md"] = ann
    cutoff = dt.date(2026, 2, 1)
    c = plan_compaction(texts, cutoff, as_of=3)
    assert c == plan_compaction(dict(reversed(texts.items())), cutoff, as_of=3)
    for e in c.edits:
        day = daily_day(e.path)
        assert e.path.startswith("bank/") or (day is not None and day < cutoff)
        assert e.before == texts.get(e.path)
    after = {**texts, **{e.path: e.after for e in c.edits}}
    again = plan_compaction(after, cutoff, as_of=4)
    assert again.edits == () and again.notes == ()
    for m in c.moves:
        (src, a, b), (dst, x, y) = (_span(m.source), _span(m.target))
        assert split_lines(texts[src])[a - 1 : b] == split_lines(after[dst])[x - 1 : y]


# --------------------------------------------------------------------------- on a brain


def test_dry_run_writes_and_records_nothing_and_prints_the_diff(tmp_path: Path) -> None:
    ws = make(tmp_path)
    brain(tmp_path, ws).close()
    files, path = tree(ws), str(tmp_path / "brain")
    with Brain(tmp_path / "brain", writer=False) as b:
        seq = b.log.last_seq
    code, out, err = ocb("compact", "--older-than", "2026-11-08", "--dry-run", "--brain", path)
    assert (code, err) == (0, "")
    assert "--- /dev/null\n+++ b/bank/conversations/Alice - Peter.md\n" in out
    assert f"--- a/{OLD}\n+++ b/{OLD}\n" in out
    # moved: out of the note, into Peter's page
    assert "\n-- W @Peter: Peter owns the billing service\n" in out
    assert "\n+- W @Peter: Peter owns the billing service\n" in out
    assert out.endswith(
        "would compact (dry run, nothing written) 2 daily notes of days before 2026-11-08: "
        "5 moves into 4 bank page(s), 496 -> 1,058 characters in 6 file(s)\n"
    )
    assert tree(ws) == files
    with Brain(tmp_path / "brain", writer=False) as b:
        assert b.log.last_seq == seq
    code, out, _ = ocb("compact", "--older-than", "2026-10-01", "--brain", path)
    assert (code, out) == (
        0,
        "nothing to compact: no daily note of days before 2026-10-01 is left as it was; "
        "nothing written or recorded\n",
    )
    code, out, _ = ocb(
        "compact", "--older-than", "2026-11-08", "--dry-run", "--json", "--brain", path
    )
    got = json.loads(out)
    assert (code, got["written"], got["notes"]) == (0, False, [PROSE, OLD])
    assert got["moves"][0] == {
        "source": f"{PROSE}#L7-L9",
        "target": "bank/conversations/Alice - Peter.md#L5-L7",
    }
    assert tree(ws) == files


def test_the_clock_decides_a_second_run_changes_nothing_and_newer_notes_stay(
    tmp_path: Path,
) -> None:
    ws = make(tmp_path)
    newer = {p: (ws / p).read_bytes() for p in ("memory/2026-11-20.md", "memory/2026-11-21.md")}
    with brain(tmp_path, ws) as b:
        r = b.compact("2d")  # by the brain's clock (2026-11-22): only older notes
        assert r.cutoff == "2026-11-20" and r.notes == [PROSE, OLD] and r.written
        assert {p: (ws / p).read_bytes() for p in newer} == newer
        files, seq = tree(ws), b.log.last_seq
        again = b.compact("2d")
        assert (again.notes, again.files, again.written) == ([], [], False)
        assert tree(ws) == files and b.log.last_seq == seq
        kinds = [(r.actor, type(r.event).__name__) for r in b.log.read(1)]
        assert ("maintenance", "MaintenanceRan") in kinds
        assert all(
            a == "maintenance" for a, _ in kinds[kinds.index(("maintenance", "MaintenanceRan")) :]
        )


def test_two_brains_compact_to_the_same_bytes(tmp_path: Path) -> None:
    got = []
    for name in ("a", "b"):
        ws = make(tmp_path / name)
        with brain(tmp_path / name, ws) as b:
            b.compact("14d")
        got.append(tree(ws))
    assert got[0] == got[1]


def test_show_as_of_prints_the_text_before_compaction(tmp_path: Path) -> None:
    ws = make(tmp_path)
    old = (ws / OLD).read_text()
    with brain(tmp_path, ws) as b:
        r = b.compact("14d")
    assert f"`ocb show {OLD} --as-of {r.as_of}`" in (ws / OLD).read_text()
    path = str(tmp_path / "brain")
    code, out, err = ocb("show", OLD, "--as-of", str(r.as_of), "--brain", path)
    assert (code, out, err) == (0, old, "")
    code, out, _ = ocb("show", OLD, "--brain", path, "--json")
    got = json.loads(out)
    assert (code, got["exact"], got["text"]) == (0, True, (ws / OLD).read_text())
    code, out, err = ocb("show", "../outside.md", "--brain", path)
    assert (code, out) == (1, "")
    assert err.startswith("error: '../outside.md' is outside the workspace\nhint: ")
    code, _, err = ocb("show", "memory/2026-11-02.md", "--brain", path)
    assert code == 1 and err.startswith("error: unknown file 'memory/2026-11-02.md' at seq")


def test_symlinks_out_of_the_workspace_are_never_written(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "note.md").write_text(NOTES[PROSE])
    ws = make(tmp_path, {k: v for k, v in NOTES.items() if k != PROSE})
    (ws / PROSE).symlink_to(outside / "note.md")
    with brain(tmp_path, ws) as b:
        r = b.compact("14d")
        assert r.notes == [OLD] and PROSE not in r.files
    assert (outside / "note.md").read_text() == NOTES[PROSE]
    # a bank page that leads out refuses the whole run: nothing is written
    ws2 = make(tmp_path / "two")
    (outside / "world.md").write_text("# World\n")
    (ws2 / "bank/world.md").symlink_to(outside / "world.md")
    with brain(tmp_path / "two", ws2) as b:
        files, seq = tree(ws2), b.log.last_seq
        with pytest.raises(WorkspaceError, match="bank/world.md"):
            b.compact("14d")
        assert tree(ws2) == files
        assert b.log.last_seq == seq
    assert (outside / "world.md").read_text() == "# World\n"


def test_facts_chunks_learned_edges_and_routes_follow_the_moved_text(tmp_path: Path) -> None:
    # a chunk's id follows the largest part of its text: here all of it goes to one page
    peter = "## Retain\n- W @Peter: Peter owns the billing service\n- B @Peter: moved desks\n"
    ws = make(tmp_path, {**NOTES, OLD: f"# 2026-11-01\n\n{peter}"})
    with brain(tmp_path, ws) as b:
        g = b.store.graph
        retain = next(i for i in g.files[OLD].chunks if "Peter owns" in g.nodes[i].text)
        other = g.files["memory/2026-11-20.md"].chunks[-1]
        b.query("who owns the billing service", chat_id="c1")
        b.learn(1.0, chat_id="c1", fired_ids=[retain, other], rule="pg")
        weight = b.store.graph.out[retain][other].weight
        b.query("who owns the billing service", chat_id="c2")
        b.learn(1.0, chat_id="c2", used=[retain], rule="route")
        mem = b.store.state("memory")
        fact = next(
            f.id for f in mem.facts.values() if f.content == "Peter owns the billing service"
        )
        day_ns = mem.facts[fact].time_ns
        r = b.compact("14d")
        assert r.carried >= 1 and r.routes_retied == 1
        g, mem = b.store.graph, b.store.state("memory")
        node = g.nodes[retain]
        assert (
            node.path == "bank/entities/Peter.md" and "Peter owns the billing service" in node.text
        )
        assert g.out[retain][other].weight == weight
        assert mem.facts[fact].path == "bank/entities/Peter.md" and not mem.facts[fact].retired_seq
        assert mem.facts[fact].time_ns == day_ns  # still dated by its note, for --since
        routes = b.store.state("routes").routes
        assert any(retain in live_credits(route, g) for route in routes.values())
        for name, proj in (("graph", graph_projection), ("memory", memory_projection)):
            assert proj.snapshot(rebuild(b.log, [name])[name]) == proj.snapshot(b.store.state(name))


# --------------------------------------------------------------------------- crashes

_KILLER = """
import os, signal, sys
from pathlib import Path
import ocb.memory.compact as c
from ocb.brain import Brain
from ocb_events.clock import TickClock
at, n = int(sys.argv[2]), [0]
real_write, real_sync = c.write_workspace_file, c.sync
def step():
    n[0] += 1
    if n[0] == at:
        os.kill(os.getpid(), signal.SIGKILL)
def write(*a, **k):
    step()
    out = real_write(*a, **k)
    return out
def sync(*a, **k):
    if k.get("cause") == "compact":
        step()
    return real_sync(*a, **k)
c.write_workspace_file, c.sync = write, sync
with Brain(Path(sys.argv[1]), clock=TickClock(start_ns=int(sys.argv[3]), step_ns=10**9)) as b:
    b.compact("14d")
"""


@pytest.mark.parametrize("at", range(1, 8))
def test_a_kill_at_any_step_leaves_old_or_new_files_and_a_log_that_folds(
    tmp_path: Path, at: int
) -> None:
    ws = make(tmp_path)
    brain(tmp_path, ws).close()
    before = tree(ws)
    ref = make(tmp_path / "ref")
    with brain(tmp_path / "ref", ref) as b:
        b.compact("14d")
    done = tree(ref)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    p = subprocess.run(
        [sys.executable, "-c", _KILLER, str(tmp_path / "brain"), str(at), str(NOW)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert p.returncode == -signal.SIGKILL, p.stderr
    for path, data in tree(ws).items():
        if "/." in f"/{path}":  # a temp file left by the kill: swept by the next write
            continue
        assert _seqless(data) in (_seqless(before.get(path)), _seqless(done.get(path))), path
    clock = TickClock(start_ns=NOW, step_ns=10**9)
    with Brain(tmp_path / "brain", clock=clock) as b:  # the rerun completes the compaction
        b.compact("14d")
        for name, proj in (("graph", graph_projection), ("memory", memory_projection)):
            assert proj.snapshot(rebuild(b.log, [name])[name]) == proj.snapshot(b.store.state(name))
        g = b.store.graph
        for path, entry in g.files.items():
            assert entry.content_hash, path
        assert b.compact("14d").files == []
    final = tree(ws)
    assert {p: _seqless(d) for p, d in final.items()} == {p: _seqless(d) for p, d in done.items()}


def _seqless(data: bytes | None) -> bytes | None:
    """A compacted note names the seq of its old text, which a rerun moves on."""
    return None if data is None else re.sub(rb"--as-of \d+", b"--as-of N", data)


def test_an_extractor_writes_the_summaries_and_a_failing_one_writes_nothing(
    tmp_path: Path,
) -> None:
    ws = make(tmp_path)
    talk = (
        f'{sys.executable} -c "import os, sys; t = sys.stdin.read(); '
        f"print('## Retain'); print(os.environ['OCB_NOTE_PATH'], len(t.splitlines()))\""
    )
    with brain(tmp_path, ws) as b:
        files, seq = tree(ws), b.log.last_seq
        bad = f"{sys.executable} -c \"import sys; sys.exit('no model here')\""
        with pytest.raises(InputError, match="exit 1: no model here"):
            b.compact("14d", extractor=bad)
        assert tree(ws) == files and b.log.last_seq == seq
        b.compact("14d", extractor=talk)
    assert (
        (ws / OLD)
        .read_text()
        .startswith(f"# 2026-11-01\n\n## Summary\n\n- {OLD} 6\n\n{COMPACTED}\n")
    )
    ws2 = make(tmp_path / "cli")
    brain(tmp_path / "cli", ws2).close()
    args = ["--older-than", "2026-11-08", "--brain", str(tmp_path / "cli" / "brain")]
    code, out, err = ocb("compact", "--extractor", "no-such-command-x", *args)
    assert (code, out) == (1, "")
    assert err.startswith(
        "error: the extractor 'no-such-command-x' failed on memory/2026-10-30.md ("
    )
    assert len(err.splitlines()) == 2
