"""Answering a file of queries in one process (one JSON answer per input line)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ocb.brain import Brain
from ocb.wire import answer_json
from ocb_events.errors import InputError, OcbError


def _parse(line: str) -> dict[str, Any]:
    s = line.strip()
    if s.startswith("{"):
        try:
            obj = json.loads(s)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"not valid JSON: {exc.msg}", 'one query per line: text or {"query": ...}'
            ) from None
        if not isinstance(obj, dict):
            raise InputError("a JSON line must be an object", 'use {"query": "...", "qid": "q1"}')
        return obj
    return {"query": s}


def run_batch(
    brain: Brain, path: Path, *, top: int, chat_id: str = "", mode: str | None = None
) -> Iterator[dict[str, Any]]:
    """One answer object per non-blank line of ``path``: plain text, or JSON with a
    ``query`` (or ``text``) field and optional ``qid``, ``top`` and ``chat_id``.
    A bad line yields ``{"qid": ..., "error": ...}`` and the batch goes on. Traces
    share one group commit.

    Raises:
        InputError: the file cannot be read.
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"cannot read batch file {path}: {exc}", "pass a UTF-8 text file"
        ) from None
    with brain.log.group():
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            t0 = time.perf_counter()
            obj: dict[str, Any] = {}
            try:
                obj = _parse(line)
                text = str(obj.get("query", obj.get("text", "")))
                answer = brain.query(
                    text,
                    top=int(obj.get("top", top)),
                    chat_id=str(obj.get("chat_id", chat_id)),
                    mode=mode,
                )
                out = answer_json(answer)
            except OcbError as exc:
                out = {"error": exc.message, "line": n}
            if "qid" in obj:
                out = {"qid": obj["qid"], **out}
            out["latency_ms"] = round((time.perf_counter() - t0) * 1000.0, 3)
            yield out
