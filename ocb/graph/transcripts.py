"""Agent transcripts read into turns: OpenClaw session JSONL (a ``session`` header, then
``message`` entries linked by ``parentId``, as the host stores and exports them) and
flat ``{"role": ..., "content": ...}`` lines.

A turn is a user message and the answer that followed it (the assistant's text up to the
next user message), with what the memory tools showed the agent in between
(``memory_get`` reads, ``memory_search`` results) and the next user message, which may
correct the answer. Each turn carries a digest of its own content and of every turn
before it in its transcript (``chain``): a transcript read again, grown, moved, copied,
exported again or forked is known by its turns, not by its file.

Example:
    >>> t = read_transcript(Path("sessions/4f1c.jsonl"))  # doctest: +SKIP
    >>> [(turn.question, turn.answer) for turn in t.turns][:1]  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec

from ocb_events.errors import InputError

MEMORY_TOOLS = frozenset({"memory_get", "memory_search"})
_INJECTED = re.compile(r"<ocb-memory>.*?</ocb-memory>", re.S)
_TOOL_ROLES = frozenset({"toolResult", "tool"})


class Passage(msgspec.Struct, frozen=True):
    """Lines of a workspace file a memory tool showed the agent (1-based, inclusive):
    ``read`` by ``memory_get``, ``found`` by ``memory_search``."""

    path: str
    start: int
    end: int
    text: str
    how: Literal["read", "found"]


class Turn(msgspec.Struct, frozen=True):
    """A user message and the answer that followed it.

    Attributes:
        index: its place among the transcript's answered turns (from 0).
        line: the line of the transcript that holds the user message (from 1).
        question: the user's text (context injected by the memory plugin left out).
        answer: the assistant's text until the next user message.
        passages: what the memory tools showed the agent before it answered.
        reply: the next user message ("" when none follows yet).
        chain: the digest of this turn and every turn before it.
    """

    index: int
    line: int
    question: str
    answer: str
    passages: tuple[Passage, ...]
    reply: str
    chain: str


class Transcript(msgspec.Struct, frozen=True):
    """A transcript read: its answered turns, the user messages that have no answer
    (``pending``: the last one, still waiting; ``unanswered``: earlier ones), and the
    lines skipped with their reason ``(line, reason)``."""

    path: str
    session_id: str
    turns: tuple[Turn, ...]
    pending: int = 0
    unanswered: int = 0
    skipped: tuple[tuple[int, str], ...] = ()


class _Message(msgspec.Struct):
    line: int
    role: str
    text: str
    final: bool
    passages: tuple[Passage, ...] = ()


# --------------------------------------------------------------------------- files


def find_transcripts(paths: Sequence[Path]) -> list[Path]:
    """The transcript files ``paths`` name: files as given, directories as the
    ``*.jsonl`` files under them (sorted); each file once.

    Raises:
        InputError: no path given, a path that does not exist, or a directory with
            no ``*.jsonl`` file under it.
    """
    if not paths:
        raise InputError(
            "no transcripts given",
            "pass `paths=PATH` (a session JSONL file or a directory)",
            param="paths",
        )
    found: dict[Path, None] = {}
    for p in paths:
        if not p.exists():
            raise InputError(
                f"no such transcript file or directory: {p}",
                "pass a session JSONL file or a directory of them "
                "(e.g. ~/.openclaw/agents/main/sessions)",
            )
        if p.is_dir():
            files = sorted(f for f in p.rglob("*.jsonl") if f.is_file())
            if not files:
                raise InputError(
                    f"no *.jsonl file under {p}", "pass the directory that holds the sessions"
                )
            found.update(dict.fromkeys(f.resolve() for f in files))
        else:
            found[p.resolve()] = None
    return list(found)


def read_transcript(path: Path) -> Transcript:
    """The turns of the transcript at ``path``. Lines that are not JSON objects are
    skipped with their reason, as is a last line still being written.

    Raises:
        InputError: the file cannot be read, is not UTF-8 text, or holds no JSON object
            on any line (it is not JSONL); nothing is read from it.
    """
    try:
        raw = _read_regular(path)
    except OSError as exc:
        raise InputError(
            f"cannot read transcript {path}: {exc.strerror or exc}", "check the path"
        ) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_jsonl(path, f"not UTF-8 text (byte {exc.start})") from exc
    objects, skipped = _objects(text)
    if not objects and skipped:
        raise _not_jsonl(path, f"line {skipped[0][0]}: {skipped[0][1]}")
    session_id, messages = _messages(objects)
    return _pair(str(path), session_id, messages, tuple(skipped))


def _read_regular(path: Path) -> bytes:
    """The bytes of ``path`` when it is a regular file: opened without blocking (a
    FIFO's open never waits for a writer) and checked open, so no file hangs the read.

    Raises:
        InputError: it is a FIFO, a socket, a device or a directory.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(
                f"transcript {path} is not a regular file", "pass a session JSONL file"
            )
        return fh.read()


def _not_jsonl(path: Path, why: str) -> InputError:
    return InputError(
        f"{path} is not a JSONL transcript: {why}",
        "pass session transcripts: one JSON object per line (OpenClaw session "
        'files, or {"role": ..., "content": ...} lines)',
    )


def _objects(text: str) -> tuple[list[tuple[int, dict[str, Any]]], list[tuple[int, str]]]:
    """Each line's JSON object with its line number, and the lines skipped."""
    lines = text.split("\n")
    objects: list[tuple[int, dict[str, Any]]] = []
    skipped: list[tuple[int, str]] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            last = n == len(lines) and not text.endswith("\n")
            skipped.append((n, "an unfinished last line" if last else f"not JSON ({exc.msg})"))
            continue
        except RecursionError:
            skipped.append((n, "JSON nested too deeply"))
            continue
        if isinstance(obj, dict):
            objects.append((n, obj))
        else:
            skipped.append((n, f"not a JSON object ({type(obj).__name__})"))
    return objects, skipped


# --------------------------------------------------------------------------- messages


def _messages(objects: list[tuple[int, dict[str, Any]]]) -> tuple[str, list[_Message]]:
    """The session id (from an OpenClaw header) and the messages of the active branch,
    in order."""
    session_id = ""
    entries: list[tuple[int, dict[str, Any]]] = []
    for n, obj in objects:
        if obj.get("type") == "session":
            session_id = str(obj.get("id") or "")
        elif obj.get("type") == "message" and isinstance(obj.get("message"), dict):
            entries.append((n, obj))
        elif "role" in obj and "type" not in obj:
            entries.append((n, {"message": obj}))
    branch = _active_branch([o for _, o in objects])
    out = []
    for n, entry in entries:
        if branch is not None and entry.get("id") not in branch:
            continue
        msg = _message(n, entry["message"])
        if msg is not None:
            out.append(msg)
    return session_id, out


def _active_branch(objects: list[dict[str, Any]]) -> set[str] | None:
    """The ids on the path from the last entry back to the root (None when the entries
    carry no ids: the file's order is the conversation's)."""
    parents = {
        str(o["id"]): o.get("parentId")
        for o in objects
        if o.get("type") not in (None, "session") and isinstance(o.get("id"), str)
    }
    if not parents:
        return None
    leaf = next(
        str(o["id"])
        for o in reversed(objects)
        if o.get("type") not in (None, "session") and isinstance(o.get("id"), str)
    )
    branch: set[str] = set()
    node: object = leaf
    while isinstance(node, str) and node in parents and node not in branch:
        branch.add(node)
        node = parents[node]
    return branch


def _message(line: int, m: dict[str, Any]) -> _Message | None:
    role = str(m.get("role", ""))
    if role in _TOOL_ROLES:
        name = str(m.get("toolName") or m.get("name") or "")
        if name not in MEMORY_TOOLS or m.get("isError"):
            return None
        return _Message(line, "tool", "", False, _passages(name, m))
    if role not in ("user", "assistant"):
        return None
    text = _text(m.get("content"))
    if role == "user":
        text = _INJECTED.sub("", text).strip()
    final = role == "user" or m.get("stopReason") not in ("toolUse", "tool_use")
    return _Message(line, role, text, final)


def _text(content: object) -> str:
    """The text of a message's content: a string, or its ``text`` parts joined."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = [
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") in ("text", "input_text", "output_text")
        ]
        return "\n".join(p for p in parts if p).strip()
    return ""


def _passages(tool: str, m: dict[str, Any]) -> tuple[Passage, ...]:
    """What a memory tool's result showed: its ``details``, else its text as JSON."""
    got = m.get("details")
    if not isinstance(got, dict):
        try:
            got = json.loads(_text(m.get("content")))
        except ValueError:
            return ()
    if not isinstance(got, dict):
        return ()
    if tool == "memory_get":
        p = _passage(got.get("path"), got.get("from"), got.get("to"), got.get("text"), "read")
        return (p,) if p is not None else ()
    results = got.get("results")
    items = results if isinstance(results, list) else []
    found = [
        _passage(r.get("path"), r.get("startLine"), r.get("endLine"), r.get("snippet"), "found")
        for r in items
        if isinstance(r, dict)
    ]
    return tuple(p for p in found if p is not None)


def _passage(path: object, start: object, end: object, text: object, how: str) -> Passage | None:
    if not isinstance(path, str) or not path or not isinstance(start, int):
        return None
    stop = end if isinstance(end, int) and end >= start else start
    body = text if isinstance(text, str) else ""
    return Passage(path.removeprefix("./"), start, stop, body, how)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- turns


def _pair(
    path: str, session_id: str, messages: list[_Message], skipped: tuple[tuple[int, str], ...]
) -> Transcript:
    """Each user message with the answer and the tool results up to the next one."""
    groups: list[tuple[_Message, list[_Message]]] = []
    for msg in messages:
        if msg.role == "user":
            groups.append((msg, []))
        elif groups:
            groups[-1][1].append(msg)
    turns: list[Turn] = []
    chain = ""
    unanswered = pending = 0
    for i, (user, after) in enumerate(groups):
        answer = "\n".join(m.text for m in after if m.role == "assistant" and m.text)
        last = i == len(groups) - 1
        if not user.text:  # an image or a tool's result sent as the user's: no question
            continue
        if not answer or (last and not _finished(after)):
            pending += last
            unanswered += not last
            continue
        chain = digest(chain, user.text, answer)
        reply = groups[i + 1][0].text if not last else ""
        passages = tuple(p for m in after for p in m.passages)
        turns.append(Turn(len(turns), user.line, user.text, answer, passages, reply, chain))
    return Transcript(path, session_id, tuple(turns), pending, unanswered, skipped)


def _finished(after: list[_Message]) -> bool:
    """The agent's run ended: its last message is an assistant's final text."""
    return (
        bool(after) and after[-1].role == "assistant" and after[-1].final and bool(after[-1].text)
    )


def digest(previous: str, question: str, answer: str) -> str:
    """The chain digest of a turn: sha256 of the digest before it and its texts."""
    body = json.dumps([previous, question, answer], ensure_ascii=False).encode()
    return hashlib.sha256(body).hexdigest()
