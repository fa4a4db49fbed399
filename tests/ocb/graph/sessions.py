"""Agent transcripts for the warm tests, written as the OpenClaw host writes a session
(the shapes of its ``transcript_events`` rows and of ``exportToJsonl``: a ``session``
header, ``model_change``, ``thinking_level_change`` and ``custom`` entries, then
``message`` entries linked by ``parentId``; tool calls as ``toolCall`` parts, their
results as ``toolResult`` messages with ``details``) or as flat role/content lines."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

QUESTIONS = [
    "how do I roll back a bad deploy",
    "who is on call",
    "how do we run a database migration",
    "what do I do when CI is red on main",
    "how do feature flags get cleaned up",
    "what is the incident response process",
    "how do we tune postgres connection pools",
    "what does the hotfix process look like",
]


@dataclass
class Exchange:
    """A user message, the tools the agent called before answering (name, arguments,
    the result's details) and its answer ("" for none yet)."""

    question: str
    answer: str = ""
    tools: list[tuple[str, dict[str, Any], dict[str, Any]]] = field(default_factory=list)


def _entry(kind: str, n: int, parent: str | None, **body: Any) -> dict[str, Any]:
    ts = f"2026-11-26T16:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
    return {"type": kind, "id": f"e{n}", "parentId": parent, "timestamp": ts, **body}


def openclaw_lines(exchanges: Sequence[Exchange], session_id: str = "sess-1") -> list[str]:
    """The JSONL lines of a session holding ``exchanges``."""
    header = {"type": "session", "version": 4, "id": session_id,
              "timestamp": "2026-11-26T16:00:00.000Z", "cwd": "/home/me/workspace"}  # fmt: skip
    rows: list[dict[str, Any]] = [header]
    parent: str | None = None

    def add(kind: str, **body: Any) -> None:
        nonlocal parent
        row = _entry(kind, len(rows), parent, **body)
        rows.append(row)
        parent = row["id"]

    add("model_change", provider="fake", modelId="fake-model")
    add("thinking_level_change", thinkingLevel="off")
    add("custom", customType="model-snapshot", data={"provider": "fake"})
    for x in exchanges:
        add("message", message={"role": "user", "content": x.question, "timestamp": 1,
                                "__openclaw": {"senderIsOwner": True}})  # fmt: skip
        for i, (name, args, details) in enumerate(x.tools):
            call = {"type": "toolCall", "id": f"call_{i}", "name": name, "arguments": args}
            add("message", message={"role": "assistant", "content": [call],
                                    "stopReason": "toolUse"})  # fmt: skip
            text = json.dumps(details, indent=2)
            add("message", message={"role": "toolResult", "toolCallId": f"call_{i}",
                                    "toolName": name, "content": [{"type": "text", "text": text}],
                                    "details": details, "isError": False})  # fmt: skip
        if x.answer:
            add("message", message={"role": "assistant", "stopReason": "stop",
                                    "content": [{"type": "text", "text": x.answer}]})  # fmt: skip
    return [json.dumps(r) for r in rows]


def write_session(path: Path, exchanges: Sequence[Exchange], session_id: str = "sess-1") -> Path:
    """An OpenClaw session file holding ``exchanges``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(openclaw_lines(exchanges, session_id)) + "\n")
    return path


def write_flat(path: Path, exchanges: Sequence[Exchange]) -> Path:
    """A transcript of flat ``{"role", "content"}`` lines."""
    lines = []
    for x in exchanges:
        lines.append({"role": "user", "content": x.question})
        for name, _, details in x.tools:
            lines.append({"role": "tool", "name": name, "content": json.dumps(details)})
        if x.answer:
            lines.append({"role": "assistant", "content": x.answer})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


Tool = tuple[str, dict[str, Any], dict[str, Any]]


def memory_get(path: str, start: int, end: int, text: str) -> Tool:
    """A ``memory_get`` call and the result the plugin answers with."""
    args = {"path": path, "from": start, "lines": end - start + 1}
    return "memory_get", args, {"path": path, "from": start, "to": end, "total_lines": 99,
                                "text": text}  # fmt: skip


def memory_search(query: str, hits: Sequence[tuple[str, int, int, str]]) -> Tool:
    """A ``memory_search`` call and its results (path, start, end, snippet)."""
    results = [
        {"path": p, "startLine": a, "endLine": b, "score": 0.9, "snippet": s}
        | {"source": "memory", "citation": f"{p}#L{a}-L{b}"}
        for p, a, b, s in hits
    ]
    return "memory_search", {"query": query}, {"results": results}
