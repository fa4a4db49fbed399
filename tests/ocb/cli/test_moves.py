"""A file renamed and edited between two ``ocb init`` runs (a plain ``mv``, or ``git mv``
and an edit in one commit) keeps its chunk ids, so its learned edges and its route still
fire at the new path."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ocb.brain import Brain
from tests.ocb.cli.support import QUESTION, ocb

OLD, NEW = "runbooks/rollback.md", "runbooks/rollback-v2.md"


def edges_of(brain: Path, ids: set[str]) -> dict[tuple[str, str], float]:
    with Brain(brain, writer=False) as b:
        g = b.graph
        return {
            (s, t): e.weight
            for s, outs in sorted(g.out.items())
            for t, e in sorted(outs.items())
            if s in ids or t in ids
        }


def ids_of(brain: Path, path: str) -> tuple[str, ...]:
    with Brain(brain, writer=False) as b:
        entry = b.graph.files.get(path)
        return entry.chunks if entry is not None else ()


def taught(brain: Path) -> str:
    """A route for QUESTION crediting a chunk of OLD (not its last), and edges moved by a
    policy-gradient outcome; the chunk the route credits."""
    code, out, _ = ocb("query", QUESTION, "--brain", brain, "--json", "--top", "10")
    assert code == 0
    answer = json.loads(out)
    last = ids_of(brain, OLD)[-1]
    used: str = next(i for i in answer["fired"] if i.startswith(OLD) and i != last)
    trace = answer["trace_id"]
    code, _, _ = ocb("learn", "--brain", brain, "--trace", trace, "--outcome", 1, "--used", used)
    assert code == 0
    code, out, _ = ocb(
        "learn", "--brain", brain, "--trace", trace, "--outcome", 1, "--rule", "pg",
        "--source", "self", "--json",
    )  # fmt: skip
    assert code == 0 and json.loads(out)["deltas"]
    return used


def check_moved(
    brain: Path,
    workspace: Path,
    used: str,
    ids: tuple[str, ...],
    edges: dict[tuple[str, str], float],
) -> None:
    """``ocb init`` records the move and the edit: the old chunks keep their ids at NEW
    (the edited one revised), every edge of theirs keeps its weight, the route fires."""
    code, out, err = ocb("init", "--workspace", workspace, "--brain", brain, "--json")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert (report["files_moved"], report["files_changed"]) == (1, 1)
    assert (report["files_indexed"], report["files_removed"], report["chunks_removed"]) == (0, 0, 0)
    ids = ids_of(brain, NEW)
    assert ids_of(brain, OLD) == () and set(ids) <= set(ids_of(brain, NEW))
    after = edges_of(brain, set(ids))
    assert {k: after.get(k) for k in edges} == edges
    code, out, _ = ocb("query", QUESTION, "--brain", brain, "--json", "--top", "10")
    answer = json.loads(out)
    assert answer["route"] and answer["fired"] == [used]
    assert answer["results"][0]["source"].startswith(NEW + "#L")


def test_a_file_renamed_with_one_appended_line_keeps_its_ids_edges_and_route(
    cli_brain: Path, workspace: Path
) -> None:
    used = taught(cli_brain)
    ids = ids_of(cli_brain, OLD)
    edges = edges_of(cli_brain, set(ids))
    (workspace / OLD).rename(workspace / NEW)
    with (workspace / NEW).open("a") as f:
        f.write("\nAsk in #lumen-deploys before a second rollback.\n")
    check_moved(cli_brain, workspace, used, ids, edges)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_mv_and_an_edit_in_one_commit_keep_the_ids_edges_and_route(
    cli_brain: Path, workspace: Path
) -> None:
    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=workspace, check=True, capture_output=True,
        )  # fmt: skip

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "notes")
    used = taught(cli_brain)
    ids = ids_of(cli_brain, OLD)
    edges = edges_of(cli_brain, set(ids))
    git("mv", OLD, NEW)
    text = (workspace / NEW).read_text()
    staging = "is not an incident."  # in the last chunk, which the route does not credit
    (workspace / NEW).write_text(text.replace(staging, staging[:-1] + " either.", 1))
    git("commit", "-qam", "rollback v2")
    check_moved(cli_brain, workspace, used, ids, edges)
