"""The tools' declarations: each says whether it records, the lists the server
registers are derived from those marks, and a tool's answer is the daemon's shape."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from ocb.daemon.live import LiveBrain
from ocb.daemon.methods import methods
from ocb.mcp.backend import LocalBackend, in_process
from ocb.mcp.errors import in_tool_terms
from ocb.mcp.tools import READ_ONLY, TOOL_NAMES, Tools

QUESTION = "how do I roll back a bad deploy"


def test_every_tool_says_whether_it_records() -> None:
    public = [n for n, f in vars(Tools).items() if inspect.isfunction(f) and not n.startswith("_")]
    unmarked = [n for n in public if n != "each" and not hasattr(getattr(Tools, n), "read_only")]
    assert unmarked == [], f"add @tool(read_only=...) to: {', '.join(unmarked)}"
    assert TOOL_NAMES[:2] == ("memory_search", "memory_get") and len(TOOL_NAMES) == 9
    assert READ_ONLY == {"memory_get", "memory_why", "kg_get"}


class _Seen(LocalBackend):
    def __init__(self, live: LiveBrain) -> None:
        super().__init__(methods(live))
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self.calls.append((method, params))
        return super().call(method, params)


def test_memory_search_answers_with_the_daemons_hits_and_records_as_mcp(built: Path) -> None:
    with LiveBrain(built) as live:
        seen = _Seen(live)
        got = Tools(seen).memory_search(QUESTION, limit=3)
        assert seen.calls == [("search", {"text": QUESTION, "top": 3, "chat_id": "",
                                          "actor": "mcp"})]  # fmt: skip
        trace = live.events(since=0, types=["query_traced"])
        assert [r.actor for r in trace][-1:] == ["mcp"]
    assert set(got) == {"trace_id", "results"} and 1 <= len(got["results"]) <= 3
    assert set(got["results"][0]) == {"path", "startLine", "endLine", "score", "snippet",
                                      "citation", "id", "kind"}  # fmt: skip


def test_in_process_runs_the_daemons_methods_itself(built: Path) -> None:
    with in_process(built) as local:
        assert local.call("read", {"path": "runbooks/rollback.md", "lines": 1})["from"] == 1


def test_the_brains_parameters_are_said_as_the_tools_arguments() -> None:
    said = in_tool_terms("memory_recall", "`k` must be at least 1, got 0", "pass `k=5`")
    assert said == "limit must be at least 1, got 0\nhint: pass limit=5"
    said = in_tool_terms("memory_recall", "`depth` must be 0 or more", "use 0, 1 or 2")
    assert said == "depth must be 0 or more\nhint: use 0, 1 or 2"
    assert "`" not in in_tool_terms("memory_search", "`top` must be at least 1, got 0", "")
