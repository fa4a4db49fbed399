"""Real file events: a daemon watching its workspace ends each change (edit, add,
delete, rename, atomic save, a 1,000-file burst) with the brain equal to a fresh init of
the workspace, and the learned weights of untouched chunks unchanged."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ocb.brain import Brain
from tests.ocb.daemon.support import daemon, rpc, stop, wait_for
from tests.ocb.support import chunk_view
from workspace_sync import FileText, read_text


def chunks(brain: Path) -> dict[str, list[tuple[int, int, str]]]:
    with Brain(brain, writer=False) as b:
        return chunk_view(b)


def fresh(workspace: Path, tmp: Path) -> dict[str, list[tuple[int, int, str]]]:
    copy = tmp / "copy-ws"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(workspace, copy)
    b, _ = Brain.init(tmp / "fresh-brain", copy)
    b.close()
    got = chunks(tmp / "fresh-brain")
    shutil.rmtree(tmp / "fresh-brain")
    return got


def weights(brain: Path, paths: set[str]) -> dict[tuple[str, str], float]:
    """The weights of edges whose two ends lie in ``paths``."""
    with Brain(brain, writer=False) as b:
        g = b.graph
        return {
            (s, t): e.weight
            for s, outs in sorted(g.out.items())
            for t, e in sorted(outs.items())
            if g.nodes[s].path in paths and g.nodes[t].path in paths
        }


def synced(brain: Path, syncs: int) -> int | None:
    n = rpc(brain, "status")["syncs"]
    return n if n > syncs else None


def test_each_kind_of_change_ends_equal_to_a_fresh_init(built: Path, tmp_path: Path) -> None:
    ws = Path(Brain(built, writer=False).graph.workspace)
    with daemon(built) as proc:
        ans = rpc(built, "query", text="how do I roll back a bad deploy")
        rpc(built, "learn", outcome=1.0, trace_id=ans["trace_id"], rule="pg")
        before = rpc(built, "status")["syncs"]
        untouched = {"runbooks/rollback.md"}
        learned = weights(built, untouched)
        target = ws / "runbooks" / "deploy.md"
        steps = [
            ("edit", lambda: target.write_text(target.read_text() + "\n\nA new line.\n")),
            ("add", lambda: (ws / "notes" / "new.md").write_text("# New\n\nFresh words.\n")),
            ("delete", lambda: (ws / "notes" / "new.md").unlink()),
            ("rename", lambda: os.replace(target, ws / "runbooks" / "shipping.md")),
            ("atomic save", lambda: _atomic(ws / "runbooks" / "shipping.md")),
        ]
        for what, change in steps:
            change()
            before = wait_for(lambda b=before: synced(built, b), f"a sync after {what}")
            wait_for(lambda: chunks(built) == fresh(ws, tmp_path), f"{what} to be synced")
        burst = ws / "burst"
        burst.mkdir()
        for i in range(1000):
            (burst / f"b{i:04d}.md").write_text(f"# Burst {i}\n\nburst note {i}.\n")
        wait_for(lambda: len(chunks(built)) == len(fresh(ws, tmp_path)), "the burst")
        assert chunks(built) == fresh(ws, tmp_path)
        after = rpc(built, "status")["syncs"]
        assert after - before <= 10  # a burst is a few syncs, not 1,000
        assert weights(built, untouched) == learned
        assert stop(proc) == 0


def _atomic(path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(path.read_text().replace("A new line.", "A newer line."))
    swap = path.with_name("." + path.name + ".swp")
    swap.write_text("swap")
    os.replace(tmp, path)
    swap.unlink()


def hash_of(brain: Path, path: str) -> str:
    with Brain(brain, writer=False) as b:
        entry = b.graph.files.get(path)
        return entry.content_hash if entry is not None else ""


def ids_of(brain: Path, path: str) -> list[str]:
    with Brain(brain, writer=False) as b:
        return list(b.graph.files[path].chunks) if path in b.graph.files else []


def test_a_renamed_file_and_a_moved_folder_keep_their_chunk_ids_and_weights(
    built: Path,
) -> None:
    ws = Path(Brain(built, writer=False).graph.workspace)
    with daemon(built) as proc:
        ans = rpc(built, "query", text="how do I roll back a bad deploy")
        rpc(built, "learn", outcome=1.0, trace_id=ans["trace_id"], rule="pg")
        ids = ids_of(built, "runbooks/deploy.md")
        learned = weights(built, {"runbooks/deploy.md"})
        assert ids and learned
        os.replace(ws / "runbooks" / "deploy.md", ws / "runbooks" / "shipping.md")
        wait_for(lambda: ids_of(built, "runbooks/shipping.md") == ids, "the rename")
        assert weights(built, {"runbooks/shipping.md"}) == learned
        os.replace(ws / "runbooks", ws / "guides")
        wait_for(lambda: ids_of(built, "guides/shipping.md") == ids, "the folder move")
        assert weights(built, {"guides/shipping.md"}) == learned
        assert stop(proc) == 0


def test_a_file_renamed_and_edited_in_one_batch_keeps_its_ids_edges_and_route(
    built: Path,
) -> None:
    ws = Path(Brain(built, writer=False).graph.workspace)
    old, new = "runbooks/rollback.md", "runbooks/rollback-v2.md"
    question = "how do I roll back a bad deploy"
    with daemon(built) as proc:
        ans = rpc(built, "query", text=question, top=10)
        ids = ids_of(built, old)
        used = next(i for i in ans["fired"] if i.startswith(old) and i != ids[-1])
        rpc(built, "learn", outcome=1.0, trace_id=ans["trace_id"], used=[used])
        rpc(built, "learn", outcome=1.0, trace_id=ans["trace_id"], rule="pg", source="self")
        learned = weights(built, {old})
        assert learned
        # the rename and the edit land within one debounce: the watcher sees one batch
        os.replace(ws / old, ws / new)
        with (ws / new).open("a") as f:
            f.write("\nAsk in #lumen-deploys before a second rollback.\n")
        on_disk = read_text(ws, new)
        assert isinstance(on_disk, FileText)
        wait_for(lambda: hash_of(built, new) == on_disk.content_hash, "the rename and edit")
        assert not ids_of(built, old)
        assert set(ids) <= set(ids_of(built, new))
        assert {k: w for k, w in weights(built, {new}).items() if k in learned} == learned
        again = rpc(built, "query", text=question, top=10)
        assert again["route"] and again["fired"] == [used]
        assert again["results"][0]["source"].startswith(new + "#L")
        assert stop(proc) == 0


def test_changes_while_no_daemon_ran_are_reconciled_at_start(built: Path) -> None:
    ws = Path(Brain(built, writer=False).graph.workspace)
    (ws / "notes" / "offline.md").write_text("# Offline\n\nwritten while nothing watched.\n")
    with daemon(built) as proc:
        ans = rpc(built, "query", text="written while nothing watched", record=False)
        assert any(h["source"].startswith("notes/offline.md") for h in ans["results"])
        assert stop(proc) == 0
