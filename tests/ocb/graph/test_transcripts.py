"""Reading agent transcripts: OpenClaw session files (header, entries linked by
parentId, tool calls and results), flat role/content lines, the active branch, lines
that are not JSON, and what makes evidence (citations, quotes, corrections)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, strategies as st
from msgspec.structs import replace

from ocb.graph.evidence import (
    QUOTE_WORDS,
    Lines,
    citations,
    correction_candidate,
    correction_cue,
    quotes,
)
from ocb.graph.transcripts import Passage, find_transcripts, read_transcript
from ocb_events.errors import InputError
from tests.ocb.graph.sessions import (
    Exchange,
    memory_get,
    memory_search,
    openclaw_lines,
    write_flat,
    write_session,
)

ROLLBACK = Exchange(
    "how do I roll back a bad deploy",
    "Run helm rollback to the last good revision (runbooks/rollback.md#L17-L30).",
    [
        memory_search("roll back", [("runbooks/rollback.md", 1, 3, "# Rollback runbook")]),
        memory_get("runbooks/rollback.md", 17, 30, "## Option A: helm rollback"),
    ],
)


def test_an_openclaw_session_pairs_each_user_message_with_its_answer(tmp_path: Path) -> None:
    exchanges = [ROLLBACK, Exchange("who is on call", "Priya."), Exchange("thanks, and now?")]
    t = read_transcript(write_session(tmp_path / "s.jsonl", exchanges, "sess-9"))
    assert t.session_id == "sess-9" and (t.pending, t.unanswered, t.skipped) == (1, 0, ())
    assert [(x.index, x.question, x.answer) for x in t.turns] == [
        (0, ROLLBACK.question, ROLLBACK.answer),
        (1, "who is on call", "Priya."),
    ]
    assert t.turns[0].passages == (
        Passage("runbooks/rollback.md", 1, 3, "# Rollback runbook", "found"),
        Passage("runbooks/rollback.md", 17, 30, "## Option A: helm rollback", "read"),
    )
    assert t.turns[0].reply == "who is on call" and t.turns[1].reply == "thanks, and now?"
    assert t.turns[0].chain != t.turns[1].chain


def test_flat_lines_read_as_the_same_turns_with_the_same_chain(tmp_path: Path) -> None:
    exchanges = [ROLLBACK, Exchange("who is on call", "Priya.")]
    flat = read_transcript(write_flat(tmp_path / "f.jsonl", exchanges))
    full = read_transcript(write_session(tmp_path / "s.jsonl", exchanges))
    # the same questions, answers, passages and chain digests, on other lines
    assert flat.session_id == "" and [t.line for t in flat.turns] == [1, 5]
    assert [replace(t, line=0) for t in flat.turns] == [replace(t, line=0) for t in full.turns]


def test_a_run_still_calling_tools_is_pending_and_injected_context_is_not_the_question(
    tmp_path: Path,
) -> None:
    lines = openclaw_lines([Exchange("<ocb-memory>[a.md#L1-L2]\nold</ocb-memory>\nwhat now")])
    call = {"type": "message", "id": "x1", "parentId": json.loads(lines[-1])["id"],
            "message": {"role": "assistant", "stopReason": "toolUse",
                        "content": [{"type": "text", "text": "Let me look."},
                                    {"type": "toolCall", "id": "c", "name": "memory_search",
                                     "arguments": {}}]}}  # fmt: skip
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([*lines, json.dumps(call)]) + "\n")
    t = read_transcript(path)
    assert (t.turns, t.pending) == ((), 1)
    done = {"type": "message", "id": "x2", "parentId": "x1",
            "message": {"role": "assistant", "stopReason": "stop", "content": "Done."}}  # fmt: skip
    path.write_text(path.read_text() + json.dumps(done) + "\n")
    t = read_transcript(path)
    assert [(x.question, x.answer) for x in t.turns] == [("what now", "Let me look.\nDone.")]


def test_only_the_active_branch_is_read(tmp_path: Path) -> None:
    rows = [json.loads(x) for x in openclaw_lines([Exchange("q1", "a1"), Exchange("q2", "a2")])]
    # the user went back to q1's answer and asked again: a branch beside q2
    rows += [
        {"type": "message", "id": "b1", "parentId": rows[-3]["id"],
         "message": {"role": "user", "content": "q3"}},
        {"type": "message", "id": "b2", "parentId": "b1",
         "message": {"role": "assistant", "content": "a3", "stopReason": "stop"}},
    ]  # fmt: skip
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    t = read_transcript(path)
    assert [(x.question, x.answer, x.reply) for x in t.turns] == [
        ("q1", "a1", "q3"),
        ("q3", "a3", ""),
    ]


def test_lines_that_are_not_json_objects_are_skipped_with_their_reason(tmp_path: Path) -> None:
    lines = openclaw_lines([Exchange("q1", "a1")])
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([lines[0], "oops {", "[1, 2]", *lines[1:], '{"type": "mess']))
    t = read_transcript(path)
    assert [x.question for x in t.turns] == ["q1"]
    assert t.skipped == (
        (2, "not JSON (Expecting value)"),
        (3, "not a JSON object (list)"),
        (len(lines) + 3, "an unfinished last line"),
    )


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"just some notes\nand more\n", "line 1: not JSON (Expecting value)"),
        (b"\xff\xfe\x00binary", "not UTF-8 text (byte 0)"),
    ],
)
def test_a_file_that_is_not_jsonl_is_refused_naming_why(
    tmp_path: Path, content: bytes, why: str
) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_bytes(content)
    with pytest.raises(InputError) as err:
        read_transcript(path)
    assert err.value.message == f"{path} is not a JSONL transcript: {why}"
    assert "one JSON object per line" in err.value.hint


def test_paths_name_files_and_the_jsonl_under_directories(tmp_path: Path) -> None:
    (tmp_path / "d" / "sub").mkdir(parents=True)
    a = write_flat(tmp_path / "d" / "a.jsonl", [])
    b = write_flat(tmp_path / "d" / "sub" / "b.jsonl", [])
    (tmp_path / "d" / "notes.txt").write_text("x")
    assert find_transcripts([tmp_path / "d", a]) == [a.resolve(), b.resolve()]
    with pytest.raises(InputError, match="no such transcript file or directory"):
        find_transcripts([tmp_path / "nope"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"no \*.jsonl file under"):
        find_transcripts([tmp_path / "empty"])


# --------------------------------------------------------------------------- evidence


def test_citations_read_every_form_an_answer_writes() -> None:
    text = "see [runbooks/rollback.md#L12-L20], `memory/2023-05-08.md#L7` and ./a.md#L3-5."
    assert citations(text) == [
        Lines("runbooks/rollback.md", 12, 20),
        Lines("memory/2023-05-08.md", 7, 7),
        Lines("a.md", 3, 5),
    ]


words = st.lists(st.text("abcdefgh", min_size=1, max_size=5), min_size=0, max_size=30)


@given(a=words, b=words, shared=words)
def test_quoting_is_sharing_a_run_of_eight_words(
    a: list[str], b: list[str], shared: list[str]
) -> None:
    answer = " ".join(a + shared)
    text = " ".join(shared + b)
    if len(shared) >= QUOTE_WORDS:
        assert quotes(answer, text) and quotes(text, answer)
    assert quotes(answer, text) == quotes(text, answer)
    assert not quotes(" ".join(a[: QUOTE_WORDS - 1]), " ".join(a[: QUOTE_WORDS - 1]))


@pytest.mark.parametrize(
    ("reply", "cue", "candidate"),
    [
        ("No, that's wrong: we roll back with helm, never kubectl.", "that's wrong", True),
        ("that didn't work, the pods still crash on start", "that didn't work", True),
        ("It is still failing after the rollback", "It is still failing", False),
        ("That is not what I asked. I wanted the staging cluster", "That is not what I asked",
         True),
        ("Wrong. The pool size is 20 on the primary.", "Wrong", True),
        ("this does not work", "this does not work", False),
        ("No problem, thanks!", "", False),
        ("No, I haven't been there yet.", "", False),
        ("Thanks! That worked.", "", False),
        ("great. Now that's wrong in the second part", "", False),  # not the first sentence
    ],
)  # fmt: skip
def test_a_correction_says_the_answer_was_wrong_in_its_first_sentence(
    reply: str, cue: str, candidate: bool
) -> None:
    assert correction_cue(reply) == cue
    assert bool(correction_candidate(reply)) == candidate
