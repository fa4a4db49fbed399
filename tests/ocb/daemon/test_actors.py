"""Who recorded what: the daemon's watcher records its syncs as ``watcher``, the
reconcile at start and every batch after it."""

from __future__ import annotations

from pathlib import Path

from ocb.brain import Brain
from tests.ocb.daemon.support import daemon, rpc, wait_for


def test_the_watchers_syncs_are_recorded_as_watcher(built: Path) -> None:
    ws = Path(Brain(built, writer=False).graph.workspace)
    before = Brain(built, writer=False).log.last_seq
    (ws / "notes" / "offline.md").write_text("# Offline\n\nwritten while nothing watched.\n")
    with daemon(built):
        wait_for(lambda: rpc(built, "status")["syncs"] >= 1, "the reconcile")
        (ws / "notes" / "live.md").write_text("# Live\n\nwritten while the daemon watched.\n")

        def indexed() -> list[dict[str, object]] | None:
            got: list[dict[str, object]] = rpc(
                built, "events", since=before, types=["file_indexed"]
            )
            return got if len(got) == 2 else None

        got = wait_for(indexed, "the watcher's sync of notes/live.md")
    assert sorted((e["event"]["path"], e["actor"]) for e in got) == [  # type: ignore[index]
        ("notes/live.md", "watcher"),
        ("notes/offline.md", "watcher"),
    ]
