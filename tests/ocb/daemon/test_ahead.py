"""Embedding a big file's chunks off the writer thread (``embed_ahead``): the sync on the
writer takes every vector from it, and records exactly what a sync that embedded them
itself records."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from hypothesis import given, strategies as st

from ocb.brain import Brain
from ocb.daemon.live import LiveBrain
from ocb.daemon.watcher import AHEAD_MIN_CHARS, embed_ahead
from ocb.engine.embed import Ahead, HashEmbedder, chunk_input
from ocb.graph.sync import sync
from ocb_events.schema import FileChanged, FileIndexed, NodesEmbedded

WORDS = "deploy rollback replica canary shard vacuum quota token audit pager".split()


def big_text(n: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    paras = []
    while sum(map(len, paras)) < n:
        words = " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), 60))
        paras.append(f"## Part {len(paras)}\n\n{words}.\n\n")
    return "".join(paras)


def recorded(brain: Path) -> tuple[list[tuple[str, str]], dict[str, list[float]]]:
    """The chunks of ``notes/big.md`` (id, text) and every chunk's vector."""
    with Brain(brain, writer=False) as b:
        g = b.graph
        ids = sorted(g.files["notes/big.md"].chunks)
        vecs = b.store.vectors_of(sorted(g.nodes))
        return [(i, g.nodes[i].text) for i in ids], {
            i: vecs[k].tolist() for k, i in enumerate(sorted(g.nodes))
        }


def new_inputs(brain: LiveBrain, since: int) -> list[str]:
    """The text each chunk vector recorded after ``since`` was embedded from."""
    events = [r.event for r in brain.log.read(since + 1)]
    texts = {
        c.id: chunk_input(c.heading, c.text)
        for ev in events
        if isinstance(ev, (FileIndexed, FileChanged))
        for c in (ev.chunks if isinstance(ev, FileIndexed) else (*ev.added, *ev.revised))
    }
    return [texts[i] for ev in events if isinstance(ev, NodesEmbedded) for i in ev.node_ids]


def test_a_big_files_vectors_all_come_from_ahead_and_equal_the_writers(
    built: Path, tmp_path: Path
) -> None:
    ws = Path(Brain(built, writer=False).graph.workspace)
    twin = tmp_path / "twin"
    shutil.copytree(built, twin)
    (ws / "notes" / "big.md").write_text(big_text(AHEAD_MIN_CHARS + 5000, seed=1))
    with LiveBrain(built) as live:
        seq = live.log.last_seq
        ahead = embed_ahead(live, ws, {"notes/big.md"})
        made = set(ahead)
        sync(live.store, ws, paths={"notes/big.md"}, embedded=ahead)
        inputs = new_inputs(live, seq)
    assert inputs and set(inputs) <= made  # the writer embedded nothing itself
    assert not ahead  # each vector taken once, and dropped
    with Brain(twin) as b:
        b.sync(ws, paths={"notes/big.md"})
    assert recorded(built) == recorded(twin)


def test_a_line_added_to_a_big_file_embeds_only_its_new_chunk(built: Path) -> None:
    ws = Path(Brain(built, writer=False).graph.workspace)
    text = big_text(AHEAD_MIN_CHARS + 5000, seed=2)
    (ws / "notes" / "big.md").write_text(text)
    with LiveBrain(built) as live:
        sync(live.store, ws, paths={"notes/big.md"})
        (ws / "notes" / "big.md").write_text(text + "## Later\n\nThe heron moved.\n")
        ahead = embed_ahead(live, ws, {"notes/big.md"})
    assert len(ahead) == 1 and next(iter(ahead)).endswith("The heron moved.")


def test_a_small_file_is_left_to_the_writer(built: Path) -> None:
    ws = Path(Brain(built, writer=False).graph.workspace)
    (ws / "notes" / "small.md").write_text("# Small\n\nA few words.\n")
    with LiveBrain(built) as live:
        assert embed_ahead(live, ws, {"notes/small.md"}) == {}


@given(st.lists(st.text(max_size=40), max_size=12), st.sets(st.integers(0, 11)))
def test_ahead_answers_as_its_inner_embedder(texts: list[str], known: set[int]) -> None:
    inner = HashEmbedder(dim=32)
    table = {texts[i]: inner.embed([texts[i]])[0] for i in sorted(known) if i < len(texts)}
    ahead = Ahead(inner, table)
    assert (ahead.id, ahead.dim) == (inner.id, inner.dim)
    np.testing.assert_array_equal(ahead.embed(texts), inner.embed(texts))
    assert not table  # taken once
    np.testing.assert_array_equal(ahead.embed(texts), inner.embed(texts))
