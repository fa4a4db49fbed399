"""Chunk identity survives edits: a small edit keeps a chunk's id (a revision), an
unrelated rewrite does not, and an edit never touches another chunk's id."""

from __future__ import annotations

import hashlib
import random

from hypothesis import given, settings, strategies as st

from ocb_events.schema import FileChanged
from workspace_sync.diff import PreviousFile, diff_file
from workspace_sync.markdown import chunk_text
from workspace_sync.scan import FileText

WORDS = "deploy rollback cache billing alert queue schema token owner runbook pager".split()


def file(text: str, path: str = "notes/a.md") -> FileText:
    return FileText(path, text, hashlib.blake2b(text.encode(), digest_size=16).hexdigest())


def indexed(text: str) -> tuple[PreviousFile, list[str]]:
    """The previous view of a file indexed from ``text``, and its chunk ids."""
    pieces = chunk_text(text, markdown=True)
    ids = [f"notes/a.md::{i}" for i in range(len(pieces))]
    from workspace_sync.diff import text_hash

    prev = PreviousFile(
        file(text).content_hash,
        [(i, text_hash(p.text)) for i, p in zip(ids, pieces, strict=True)],
        len(ids),
        {i: (p.heading, p.text) for i, p in zip(ids, pieces, strict=True)},
    )
    return prev, ids


DOC = (
    "# Runbook\n\n## Rollback\n\nRoll back the deploy with the rollback script and tell the"
    " owner in the pager channel.\n\n## Cache\n\nFlush the cache after every schema change,"
    " then watch the queue for alerts.\n"
)


def change(old: str, new: str) -> FileChanged:
    prev, _ = indexed(old)
    ev = diff_file(file(new), prev)
    assert isinstance(ev, FileChanged)
    return ev


def test_a_typo_fix_keeps_the_id() -> None:
    ev = change(DOC, DOC.replace("rollback script", "rolback script"))
    assert [c.id for c in ev.revised] and not ev.added and not ev.removed
    assert "rolback" in ev.revised[0].text


def test_a_sentence_added_keeps_the_id() -> None:
    ev = change(DOC, DOC.replace("channel.", "channel. Then check the cache."))
    assert len(ev.revised) == 1 and not ev.added and not ev.removed


def test_an_unrelated_rewrite_gets_a_new_id() -> None:
    ev = change(DOC, DOC.replace(
        "Flush the cache after every schema change, then watch the queue for alerts.",
        "Billing invoices go out monthly via the finance token service.",
    ))  # fmt: skip
    assert not ev.revised and len(ev.added) == 1 and len(ev.removed) == 1


def test_a_heading_change_gets_a_new_id() -> None:
    ev = change(DOC, DOC.replace("## Cache", "## Caching"))
    assert not ev.revised or all(c.heading != "Cache" for c in ev.revised)
    assert {c.id for c in ev.revised}.isdisjoint(ev.removed)


paragraph = st.lists(st.sampled_from(WORDS), min_size=3, max_size=14).map(" ".join)


@settings(max_examples=60)
@given(st.lists(paragraph, min_size=2, max_size=6), st.data())
def test_an_edit_never_touches_another_chunks_id(paras: list[str], data: st.DataObject) -> None:
    old = "# Doc\n\n" + "\n\n".join(f"## S{i}\n\n{p}" for i, p in enumerate(paras)) + "\n"
    k = data.draw(st.integers(0, len(paras) - 1))
    rng = random.Random(data.draw(st.integers(0, 10_000)))
    edited = list(paras)
    ws = edited[k].split()
    ws[rng.randrange(len(ws))] = rng.choice(WORDS)  # a one-word edit
    edited[k] = " ".join(ws)
    new = "# Doc\n\n" + "\n\n".join(f"## S{i}\n\n{p}" for i, p in enumerate(edited)) + "\n"
    prev, ids = indexed(old)
    ev = diff_file(file(new), prev)
    if ev is None:
        return
    assert isinstance(ev, FileChanged)
    touched = {c.id for c in ev.revised} | set(ev.removed) | {c.id for c in ev.added}
    unchanged = {s.id for s in ev.kept}
    assert unchanged | {c.id for c in ev.revised} | set(ev.removed) == set(ids)
    assert unchanged.isdisjoint(touched)
    assert len(touched - {c.id for c in ev.added}) <= 1  # only the edited chunk
