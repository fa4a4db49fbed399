"""``ocb mcp`` in its own terms, through the SDK's own client: what its tools record says
who asked (actor ``mcp``), ``memory_feedback`` takes what the answer cited and a
request id that makes a retry safe, and every error names the tool's arguments, never
the command line's flags or the validation library's report."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession

from ocb.daemon.protocol import RpcError
from tests.ocb.daemon.support import DEADLINE, ROOT, daemon, env, rpc
from tests.ocb.mcp.support import ok, refused, run_mcp

QUESTION = "how do I roll back a bad deploy"
FLAG = re.compile(r"--[a-z]|\bocb [a-z]|pydantic|https?://|validation error")


def events(brain: Path, *types: str) -> list[dict[str, Any]]:
    """``ocb events --json`` of ``types``, read through the console entry point."""
    argv = [sys.executable, "-m", "ocb.entry", "events", "--brain", str(brain), "--json"]
    for t in types:
        argv += ["--type", t]
    proc = subprocess.run(
        argv, env=env(), capture_output=True, text=True, timeout=DEADLINE, cwd=str(ROOT)
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


async def asked(s: ClientSession) -> None:
    found = await ok(s, "memory_search", {"query": QUESTION, "chat_id": "c1"})
    await ok(s, "memory_feedback", {"reward": 1, "trace_id": found["trace_id"]})
    await ok(s, "memory_retain", {"content": "Rollbacks are rehearsed every quarter"})


@pytest.mark.parametrize("no_daemon", [False, True])
def test_what_mcp_tools_record_is_recorded_with_actor_mcp(
    built: Path, tmp_path: Path, no_daemon: bool
) -> None:
    before = events(built)[-1]["seq"]
    if no_daemon:
        run_mcp(built, tmp_path / "mcp.err", "--no-daemon", check=asked)
    else:
        with daemon(built):
            run_mcp(built, tmp_path / "mcp.err", check=asked)
    got = events(built, "query_traced", "outcome_recorded", "facts_recorded")
    mine = [(e["event"]["type"], e["actor"]) for e in got if e["seq"] > before]
    assert ("query_traced", "mcp") in mine and ("outcome_recorded", "mcp") in mine
    assert [a for t, a in mine if t == "facts_recorded"] == ["mcp"]
    assert {a for _, a in mine} == {"mcp"}


def test_the_daemon_records_who_asked_and_refuses_anyone_else(built: Path) -> None:
    with daemon(built):
        answer = rpc(built, "query", text=QUESTION, actor="plugin")
        rpc(built, "learn", outcome=1, trace_id=answer["trace_id"], actor="plugin")
        rpc(built, "query", text=QUESTION)
        with pytest.raises(RpcError) as info:
            rpc(built, "query", text=QUESTION, actor="root")
        assert info.value.code == -32001 and info.value.message == "unknown actor 'root'"
        assert info.value.hint == "use one of: cli, mcp, plugin, ui"
    actors = [e["actor"] for e in events(built, "query_traced", "outcome_recorded")]
    assert actors[-3:] == ["plugin", "plugin", "cli"]


async def feedback(s: ClientSession) -> None:
    found = await ok(s, "memory_search", {"query": QUESTION, "chat_id": "c2"})
    trace, first = found["trace_id"], found["results"][0]
    cite = f"{first['citation']}"
    args = {"reward": 1, "trace_id": trace, "cited": [cite, "notes/none.md#L1"],
            "request_id": "run-1"}  # fmt: skip
    learned = await ok(s, "memory_feedback", args)
    assert learned["recorded"] and learned["used"] == [first["id"]]
    assert learned["unmatched"] == ["notes/none.md#L1"]
    again = await ok(s, "memory_feedback", args)  # a host's retry: the same answer
    assert not again["recorded"] and again["outcome_seq"] == learned["outcome_seq"]
    assert again["used"] == learned["used"] and again["unmatched"] == learned["unmatched"]
    blind = await refused(s, "memory_feedback", {"reward": 1, "trace_id": trace})
    assert "already scored by self" in blind and "request_id" in blind
    assert not FLAG.search(blind), blind


def test_feedback_takes_citations_and_a_retry_is_idempotent(built: Path, tmp_path: Path) -> None:
    with daemon(built):
        run_mcp(built, tmp_path / "mcp.err", check=feedback)


async def said_in_tool_terms(s: ClientSession) -> None:
    found = await ok(s, "memory_search", {"query": QUESTION})
    trace = found["trace_id"]
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("memory_feedback", {"reward": 2, "trace_id": trace},
         "memory_feedback: reward must be at most 1.0, got 2"),
        ("memory_feedback", {"reward": float("nan"), "trace_id": trace},
         "memory_feedback: reward should be a valid number, got None"),  # JSON has no NaN
        ("memory_feedback", {"reward": 1, "trace_id": trace, "source": "boss"},
         "memory_feedback: source must be one of 'human', 'self', 'harvester' or "
         "'teacher', got 'boss'"),
        ("memory_search", {}, "memory_search: query is required"),
        ("memory_get", {"path": "runbooks/rollback.md", "from": 0},
         "memory_get: from must be at least 1, got 0"),
        ("memory_feedback", {"reward": -1, "trace_id": trace, "used": [found["results"][0]["id"]]},
         "used names what a good answer used, but the outcome is not positive\n"
         "hint: give a positive reward, or leave out used"),
        ("memory_feedback", {"reward": 1, "trace_id": trace, "used": ["no-such-node"]},
         "hint: take ids from a search result"),
        ("memory_feedback", {"reward": 1, "chat_id": "nobody"},
         "hint: pass chat_id to memory_search first"),
        ("memory_recall", {"since": "whenever"}, "cannot read since 'whenever'"),
    ]  # fmt: skip
    for tool, args, said in cases:
        got = await refused(s, tool, args)
        assert said in got, (tool, got)
        assert not FLAG.search(got), got
        assert len(got.splitlines()) <= 2, got
    lines = len((await ok(s, "memory_get", {"path": "runbooks/rollback.md"}))["text"].split("\n"))
    past = await refused(s, "memory_get", {"path": "runbooks/rollback.md", "from": lines + 1})
    assert f"the file has {lines} lines; from must be at most {lines}" in past


@pytest.mark.parametrize("no_daemon", [False, True])
def test_errors_name_the_tools_arguments(built: Path, tmp_path: Path, no_daemon: bool) -> None:
    if no_daemon:
        run_mcp(built, tmp_path / "mcp.err", "--no-daemon", check=said_in_tool_terms)
    else:
        with daemon(built):
            run_mcp(built, tmp_path / "mcp.err", check=said_in_tool_terms)
