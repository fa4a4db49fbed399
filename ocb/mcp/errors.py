"""Errors said in a tool's own terms: a model calling ``memory_feedback`` knows its
``reward`` and ``trace_id``, not the ``ocb`` command's ``--outcome`` and ``--trace``.

The brain's errors name its parameters (`` `top` ``) and, in some hints, the command
line's flags and commands; here each becomes the argument or the tool that does the
same (`` `top` `` and ``--top`` -> ``limit``, ``ocb query`` -> ``memory_search``). A
hint that names something no tool has (``--again``) is replaced by one that does.
Arguments the SDK refuses against a tool's schema are said in one line, by argument
name (``reward must be at most 1, got 2``), never as the validation
library's report with its links.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import ValidationError

__all__ = ["in_tool_terms", "invalid_arguments"]

_FLAGS = {
    "--outcome": "reward",
    "--trace": "trace_id",
    "--chat-id": "chat_id",
    "--used": "used",
    "--cited": "cited",
    "--request-id": "request_id",
    "--top": "limit",
    "--k": "limit",
    "--since": "since",
    "--entity": "entities",
    "--type": "type",
    "--content": "content",
    "--confidence": "confidence",
    "--salience": "salience",
    "--target": "targets",
    "--source": "source",
    "--associative-depth": "depth",
    "--max-chars": "limit",
}
"""Each flag of the ``ocb`` commands the tools call, and the tools' argument for it."""
_PARAMS = {
    "top": "limit", "k": "limit", "max_chars": "limit", "outcome": "reward", "kind": "type",
    "node_type": "type",
}  # fmt: skip
"""Each parameter of the ``Brain`` methods the tools call that the tool names otherwise
(the library's errors name parameters in backticks: `` `top` must be at least 1``)."""
_PARAM = re.compile(r"`([a-z_]+)(=[^`]*)?`")
_COMMANDS = (
    (re.compile(r"list node ids from `ocb query --json`"), "take ids from a search result"),
    (re.compile(r"the trace_id printed by ocb query --json"), "the trace_id a search returned"),
    (re.compile(r"`?ocb query(?: --json)?`?"), "memory_search"),
    (re.compile(r"`?ocb recall(?: --json)?`?"), "memory_recall"),
    (re.compile(r"`?ocb retain`?"), "memory_retain"),
    (re.compile(r"`?ocb learn`?"), "memory_feedback"),
    (re.compile(r"`?ocb kg (?:get|set)`?"), "kg_get"),
)
_FLAG = re.compile(r"--[a-z][a-z-]*")
_LEFT = re.compile(r"--[a-z]|\bocb [a-z]")
_SCORED = "a trace takes one outcome per source: give memory_feedback a request_id, and "
_SCORED += "a retry with the same request_id returns the outcome already recorded"


def _terms(text: str) -> str:
    for pattern, tool in _COMMANDS:
        text = pattern.sub(tool, text)
    text = _PARAM.sub(lambda m: _PARAMS.get(m[1], m[1]) + (m[2] or ""), text)
    return _FLAG.sub(lambda m: _FLAGS.get(m[0], m[0][2:].replace("-", "_")), text)


def in_tool_terms(tool: str, message: str, hint: str) -> str:
    """The error text a tool returns: the message and, on a second line, ``hint:`` and
    the fix, both in the tool's terms."""
    hint = _SCORED if "--again" in hint or "`again`" in hint else _terms(hint)
    if _LEFT.search(hint):  # a command or flag no tool has
        hint = f"check the arguments of {tool}"
    text = _terms(message)
    return text + (f"\nhint: {hint}" if hint else "")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _one(err: Any) -> str:
    """One refused argument as a clause naming it."""
    name = ".".join(str(p) for p in err.get("loc", ())) or "the arguments"
    kind, ctx, got = err.get("type", ""), err.get("ctx") or {}, err.get("input")
    if kind == "missing":
        return f"{name} is required"
    if isinstance(got, float) and not math.isfinite(got):
        return f"{name} must be a finite number, got {got}"
    bounds = {
        "less_than_equal": ("at most", "le"),
        "greater_than_equal": ("at least", "ge"),
        "less_than": ("less than", "lt"),
        "greater_than": ("more than", "gt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return f"{name} must be {words} {ctx.get(key)}, got {_shown(got)}"
    if kind == "literal_error":
        return f"{name} must be one of {ctx.get('expected')}, got {_shown(got)}"
    msg = str(err.get("msg", "is not valid")).replace("Input should", "should")
    return f"{name} {msg[:1].lower() + msg[1:]}, got {_shown(got)}"


def invalid_arguments(tool: str, exc: ValidationError) -> str:
    """Arguments refused against ``tool``'s schema, said in one line by argument name."""
    clauses = [_one(e) for e in exc.errors(include_url=False)]
    return f"{tool}: " + "; ".join(dict.fromkeys(clauses))
