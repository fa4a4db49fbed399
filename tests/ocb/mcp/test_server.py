"""``ocb mcp`` end to end: the SDK's own client spawns it over stdio on a copy of the
example brain, lists the tools and calls every one, attached to a daemon and with
--no-daemon; bad arguments come back as tool errors and the server keeps serving."""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.client.session import ClientSession

from ocb.brain import Brain
from ocb.daemon.protocol import connect
from ocb.mcp.tools import TOOL_NAMES
from tests.ocb.daemon.support import DEADLINE, ROOT, daemon, env, hello, rpc, wait_for
from tests.ocb.mcp.support import ok, refused, run_mcp, text_of

QUESTION = "how do I roll back a bad deploy"


def served(brain: Path) -> bool:
    sock = connect(brain)
    if sock is None:
        return False
    sock.close()
    return True


def lines_of(path: Path, start: int, end: int) -> str:
    return "\n".join(path.read_text(encoding="utf-8").splitlines()[start - 1 : end])


async def every_tool(s: ClientSession, workspace: Path) -> None:
    """List the tools, then call each one and check what it returns."""
    listed = (await s.list_tools()).tools
    assert [t.name for t in listed] == list(TOOL_NAMES)
    for t in listed:
        assert t.description and t.input_schema["type"] == "object", t.name
    schema = {t.name: t.input_schema for t in listed}
    assert schema["memory_search"]["required"] == ["query"]
    assert set(schema["memory_get"]["properties"]) == {"path", "from", "lines"}

    found = await ok(s, "memory_search", {"query": QUESTION, "limit": 3, "chat_id": "c1"})
    trace, hits = found["trace_id"], found["results"]
    assert trace and 1 <= len(hits) <= 3
    first = hits[0]
    assert first["path"] == "runbooks/rollback.md"
    for h in hits:
        assert h["citation"] == f"{h['path']}#L{h['startLine']}-L{h['endLine']}"
        assert h["snippet"] and 0 < h["score"] <= 1
        cited = lines_of(workspace / h["path"], h["startLine"], h["endLine"])
        assert cited.startswith(h["snippet"].removesuffix("…"))

    span = first["endLine"] - first["startLine"] + 1
    read = await ok(s, "memory_get", {"path": first["path"], "from": first["startLine"],
                                      "lines": span})  # fmt: skip
    assert read["from"] == first["startLine"] and read["to"] == first["endLine"]
    assert read["text"] == lines_of(workspace / first["path"], read["from"], read["to"])
    whole = await ok(s, "memory_get", {"path": "runbooks/rollback.md"})
    assert whole["text"] == "\n".join((workspace / "runbooks/rollback.md").read_text().splitlines())

    learned = await ok(
        s, "memory_feedback", {"reward": 1, "trace_id": trace, "used": [first["id"]]}
    )
    assert learned["trace_id"] == trace and learned["reward"] == 1.0 and learned["recorded"]
    fixed = await ok(s, "memory_correct", {"content": "Never restart the database on a deploy",
                                           "chat_id": "c1"})  # fmt: skip
    assert fixed["node_id"].startswith("correction::") and fixed["created"]

    kept = await ok(s, "memory_retain", {"content": "Deploys freeze on Fridays", "type": "W",
                                         "entities": ["deploy"], "salience": 0.8})  # fmt: skip
    assert kept["created"] and "Deploys freeze on Fridays" in (workspace / kept["path"]).read_text()
    recalled = await ok(s, "memory_recall", {"query": "deploys freeze", "entities": ["deploy"]})
    assert recalled["results"][0]["id"] == kept["id"]
    assert recalled["results"][0]["text"] == "Deploys freeze on Fridays"

    why = await ok(s, "memory_why", {"node": first["id"]})
    assert why["id"] == first["id"] and why["exists"] and why["path"] == first["path"]
    taught = [r for r in why["routes"] if r["cause_seq"] == learned["outcome_seq"]]
    assert [(r["question"], r["delta"], r["cause"], r["trace_id"]) for r in taught] == [
        (QUESTION, 1.0, "outcome", trace)
    ]  # what the feedback taught, and why

    set_ = await ok(s, "kg_set", {"subject": "tool:render_video", "predicate": "env",
                                  "value": "DISPLAY=:0", "source": "test"})  # fmt: skip
    assert set_["changed"]
    got = await ok(s, "kg_get", {"subject": "tool:render_video"})
    assert [(f["predicate"], f["value"]) for f in got["facts"]] == [("env", "DISPLAY=:0")]
    raw = await s.call_tool("kg_get", {"subject": "tool:render_video"})
    assert json.loads(text_of(raw)) == raw.structured_content  # text and structure agree


async def bad_arguments(s: ClientSession, workspace: Path, outside: Path) -> None:
    """Each bad call is a tool error naming the problem; the server keeps serving."""
    assert "query" in await refused(s, "memory_search", {})
    assert "leaves the workspace" in await refused(s, "memory_get", {"path": "../outside.md"})
    assert "leaves the workspace" in await refused(
        s, "memory_get", {"path": "notes/../../outside.md"}
    )
    for absolute in ("/etc/passwd", str(workspace / "runbooks/rollback.md")):
        assert "not relative" in await refused(s, "memory_get", {"path": absolute})
    for link in ("notes/escape.md", "linked/secret.md"):
        msg = await refused(s, "memory_get", {"path": link})
        assert "outside the workspace" in msg and "TOP SECRET" not in msg
    assert "no file" in await refused(s, "memory_get", {"path": "notes/none.md"})
    assert "reward" in await refused(s, "memory_feedback", {"reward": math.nan, "trace_id": "t1"})
    assert "reward" in await refused(s, "memory_feedback", {"reward": math.inf, "trace_id": "t1"})
    assert "reward" in await refused(s, "memory_feedback", {"reward": 2, "trace_id": "t1"})
    unknown = await refused(s, "memory_feedback", {"reward": 1, "trace_id": "t999999"})
    assert "unknown trace id 't999999'" in unknown and "\nhint: " in unknown
    again = await ok(s, "memory_search", {"query": QUESTION})
    assert again["results"][0]["path"] == "runbooks/rollback.md"


def escapes(workspace: Path, tmp_path: Path) -> Path:
    """A file outside the workspace, a symlink to it and a symlinked folder around it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# TOP SECRET\n")
    (workspace / "notes" / "escape.md").symlink_to(outside / "secret.md")
    (workspace / "linked").symlink_to(outside, target_is_directory=True)
    return outside


def test_attached_to_the_daemon_serving_the_brain(
    built: Path, workspace: Path, tmp_path: Path
) -> None:
    outside = escapes(workspace, tmp_path)

    async def check(s: ClientSession) -> None:
        await every_tool(s, workspace)
        await bad_arguments(s, workspace, outside)

    with daemon(built):
        before = rpc(built, "status")["requests"]
        run_mcp(built, tmp_path / "mcp.err", check=check)
        # every call went to the daemon (the brain is its own: in-process would be refused)
        assert rpc(built, "status")["requests"] > before + 20
        assert rpc(built, "kg", subject="tool:render_video")["facts"][0]["value"] == "DISPLAY=:0"


@pytest.mark.parametrize("flag_first", [False, True])
def test_in_process_with_no_daemon(
    built: Path, workspace: Path, tmp_path: Path, flag_first: bool
) -> None:
    """--no-daemon after the command or before it (``ocb --no-daemon mcp``)."""
    outside = escapes(workspace, tmp_path)

    async def check(s: ClientSession) -> None:
        await every_tool(s, workspace)
        await bad_arguments(s, workspace, outside)

    flag = ("--no-daemon",)
    run_mcp(built, tmp_path / "mcp.err", *(() if flag_first else flag), check=check,
            before=flag if flag_first else ())  # fmt: skip
    assert not served(built)  # no daemon was started
    with Brain(built) as b:  # what the tools recorded is in the log
        assert b.kg_get("tool:render_video").facts[0].value == "DISPLAY=:0"
        assert list(b.events(types=["outcome_recorded"]))


def test_starts_a_daemon_when_none_runs(built: Path, tmp_path: Path) -> None:
    async def check(s: ClientSession) -> None:
        found = await ok(s, "memory_search", {"query": QUESTION})
        assert found["results"][0]["path"] == "runbooks/rollback.md"

    try:
        run_mcp(built, tmp_path / "mcp.err", check=check)
        started = hello(built)  # it outlives the MCP server, as ocb serve --detach does
        assert started is not None and started["brain"] == str(built)
    finally:
        if served(built):
            rpc(built, "shutdown")
            wait_for(lambda: not served(built), "the daemon to stop")


def test_without_the_extra_it_says_how_to_install_it(built: Path) -> None:
    blocked = "import sys; sys.modules['mcp'] = None; from ocb.entry import main; main()"
    proc = subprocess.run(
        [sys.executable, "-c", blocked, "mcp", "--brain", str(built), "--no-daemon"],
        env={**env(), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        cwd=os.fspath(ROOT),
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [  # the command that works from this checkout
        "error: ocb mcp needs the optional mcp package",
        f"hint: {shlex.quote(sys.executable)} -m pip install -e {shlex.quote(f'{ROOT}[mcp]')}",
    ]
    assert proc.stdout == ""
