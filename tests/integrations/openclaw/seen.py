"""What a turn left behind: what the model saw (the fake LLM's requests) and what the
brain recorded (its events), read the same way by every host test."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from tests.integrations.openclaw.fake_llm import FakeLlm
from tests.integrations.openclaw.host import events

__all__ = [
    "facts_saying",
    "key",
    "lines_of",
    "tool_results",
    "tool_texts",
    "turn_requests",
    "user_text",
]


def key(kind: str = "main") -> str:
    tail = uuid.uuid4().hex[:12]
    return f"agent:main:subagent:{tail}" if kind == "subagent" else f"agent:main:t-{tail}"


def turn_requests(llm: FakeLlm, marker: str) -> list[dict[str, Any]]:
    got = llm.seen_by(marker)
    assert got, f"the model never saw {marker!r}"
    return got


def tool_texts(body: dict[str, Any]) -> list[str]:
    out = []
    for m in body.get("messages") or []:
        if m.get("role") == "tool":
            c = m["content"]
            out.append(c if isinstance(c, str) else "".join(b.get("text", "") for b in c))
    return out


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(t) for t in tool_texts(body)]


def user_text(body: dict[str, Any]) -> str:
    parts = []
    for m in body.get("messages") or []:
        if m.get("role") == "user":
            c = m["content"]
            parts.append(c if isinstance(c, str) else "".join(b.get("text", "") for b in c))
    return "\n".join(parts)


def lines_of(workspace: Path, path: str, start: int, end: int) -> str:
    return "\n".join((workspace / path).read_text().split("\n")[start - 1 : end])


def facts_saying(brain: Path, text: str) -> list[dict[str, Any]]:
    """The recorded facts (as of their file's latest ``facts_recorded``) whose content
    holds ``text``."""
    latest: dict[str, list[dict[str, Any]]] = {}
    for e in events(brain, "facts_recorded"):
        latest[e["path"]] = e["facts"]
    return [f for facts in latest.values() for f in facts if text in f["content"]]
