"""The OpenClaw memory plugin in a real OpenClaw host (no mocks): its registration, the
memory tools the model calls, the context a subagent's first turn gets, the closed loop
from a run's transcript to a retained fact recalled on the next turn, and failing open
when no daemon can be had. What the model saw is read from the fake LLM's requests."""

from __future__ import annotations

import json
import re
import shutil
import sys
import uuid
from pathlib import Path

from tests.integrations.openclaw.fake_llm import FakeLlm, Script
from tests.integrations.openclaw.host import (
    PLUGIN,
    ROOT,
    Gateway,
    Live,
    clean_tmp_openclaw,
    events,
    free_port,
    rpc,
    start_daemon,
    stop_daemon,
    write_config,
)
from tests.integrations.openclaw.seen import (
    facts_saying,
    key,
    lines_of,
    tool_results,
    tool_texts,
    turn_requests,
    user_text,
)
from tests.waiting import wait_for

UNVERIFIED = "can't verify where this plugin came from"


def test_inspect_shows_the_hooks_and_no_blocked_hook(openclaw_root: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    config = write_config(tmp_path, ws, free_port(), free_port(), {"ocb": "ocb", "toolHints": True})
    gw = Gateway(openclaw_root, tmp_path, 0)
    done = gw.openclaw("plugins", "inspect", "ocb-memory", "--runtime", "--json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    hooks = {h["name"] for h in got["typedHooks"]}
    assert {"before_prompt_build", "agent_end", "before_tool_call"} <= hooks
    assert got["plugin"]["status"] == "loaded" and got["plugin"]["memorySlotSelected"] is True
    names = sorted(n for t in got["tools"] for n in t["names"])
    assert names == ["memory_get", "memory_recall", "memory_search"]  # writing tools are off
    assert got["cliCommands"] == ["brain"] and got["services"] == ["ocb-daemon"]
    assert got["policy"]["allowConversationAccess"] is True
    blocked = [d for d in got["diagnostics"] if re.search(r"block|drop", d["message"], re.I)]
    assert blocked == []
    # plugins.allow (as the README shows) is what silences the host's provenance warning
    assert UNVERIFIED not in done.stdout + done.stderr
    written = json.loads(config.read_text())
    del written["plugins"]["allow"]
    config.write_text(json.dumps(written))
    done = gw.openclaw("plugins", "inspect", "ocb-memory", "--runtime", "--json")
    clean_tmp_openclaw()
    assert UNVERIFIED in done.stdout + done.stderr


def test_memory_search_answers_with_cited_lines_of_the_right_chunk(
    live: Live, llm: FakeLlm
) -> None:
    llm.script = Script(tool="memory_search", args={"query": "how do I roll back a bad deploy"})
    marker = f"roll back the bad deploy {uuid.uuid4().hex[:8]}"
    answer = live.gateway.turn(key(), marker)
    assert answer["status"] == "ok"
    bodies = turn_requests(llm, marker)
    results = [r for b in bodies for r in tool_results(b)]
    assert results, "the model never got the tool's result"
    hits = results[0]["results"]
    assert hits and hits[0]["path"] == "runbooks/rollback.md"
    for h in hits:
        assert set(h) >= {"path", "startLine", "endLine", "score", "snippet", "source", "citation"}
        assert h["citation"] == f"{h['path']}#L{h['startLine']}" or h["citation"] == (
            f"{h['path']}#L{h['startLine']}-L{h['endLine']}"
        )
        assert h["snippet"].endswith(f"Source: {h['citation']}")
        cited = lines_of(live.workspace, h["path"], h["startLine"], h["endLine"]).strip()
        assert h["snippet"].split("\n\nSource:")[0].rstrip("…")[:200] in cited
    # a main session's turn gets no injected context by default (inject: subagents)
    assert all("<ocb-memory>" not in user_text(b) for b in bodies)


def test_memory_get_reads_lines_refuses_a_way_out_and_hides_secrets(
    live: Live, llm: FakeLlm
) -> None:
    llm.script = Script(
        tool="memory_get", args={"path": "runbooks/rollback.md", "from": 1, "lines": 3}
    )
    marker = f"read the rollback runbook {uuid.uuid4().hex[:8]}"
    live.gateway.turn(key(), marker)
    got = [r for b in turn_requests(llm, marker) for r in tool_results(b)][0]
    assert got["path"] == "runbooks/rollback.md" and got["from"] == 1 and got["lines"] == 3
    assert got["text"] == lines_of(live.workspace, "runbooks/rollback.md", 1, 3)
    outside = live.workspace.parent / "secret.md"
    outside.write_text("the launch code is 0000\n")
    (live.workspace / "notes" / "escape.md").symlink_to(outside)
    llm.script = Script(tool="memory_get", args={"path": "notes/escape.md"})
    marker = f"read the escape note {uuid.uuid4().hex[:8]}"
    live.gateway.turn(key(), marker)
    got = [r for b in turn_requests(llm, marker) for r in tool_results(b)][0]
    assert got["status"] == "error" and got["code"] == "PATH_REFUSED" and got["text"] == ""
    assert "launch code" not in json.dumps(llm.seen_by(marker))
    # inside the workspace: a hidden file is refused, a note's secret is redacted
    token = "ghp_" + "x9Kq2LmZ7vB4nR8tW1yC6pD3sF5gH0jA2eUo"
    (live.workspace / ".env").write_text(f"TOKEN={token}\n")
    (live.workspace / "notes" / "keys.md").write_text(f"# Keys\n\ntoken: {token}\n")
    for path, want in ((".env", "PATH_REFUSED"), ("notes/keys.md", "")):
        llm.script = Script(tool="memory_get", args={"path": path})
        marker = f"read {path} {uuid.uuid4().hex[:8]}"
        live.gateway.turn(key(), marker)
        got = [r for b in turn_requests(llm, marker) for r in tool_results(b)][0]
        assert got.get("code", "") == want, got
        assert token not in json.dumps(llm.seen_by(marker))
    assert "[REDACTED:" in got["text"]


def test_a_subagents_first_turn_gets_the_recalled_context(live: Live, llm: FakeLlm) -> None:
    """The main agent spawns a real subagent (the host's sessions_spawn) with a task; the
    subagent's first prompt carries the context recalled for that task."""
    parent = f"delegate the rollback ({uuid.uuid4().hex[:8]})"
    task = f"How do I roll back a bad deploy? ({uuid.uuid4().hex[:8]})"
    spawn = Script(tool="sessions_spawn", args={"task": task}, only_if=parent, reply="Rolled back.")
    llm.script = spawn
    live.gateway.turn(key(), parent)
    assert all("<ocb-memory>" not in user_text(b) for b in llm.seen_by(parent))  # a main agent

    def child_prompt() -> str | None:
        for body in llm.seen_by(task):
            text = user_text(body)
            if task in text and parent not in text:
                return text
        return None

    prompt = wait_for(child_prompt, "the subagent's first turn")
    block = re.search(r"<ocb-memory>.*?</ocb-memory>", prompt, re.S)
    assert block is not None, prompt[:2000]
    assert "[runbooks/rollback.md#L" in block.group(0)
    assert len(block.group(0)) <= 2000


def retained(workspace: Path, text: str) -> bool:
    for log in (workspace / "memory").glob("*.md"):
        body = log.read_text()
        if text in body and "## Retain" in body.split(text)[0]:
            return True
    return False


def test_a_runs_learnings_are_retained_as_claims_of_their_speakers_and_recalled_next_turn(
    live: Live, llm: FakeLlm
) -> None:
    code = f"E{uuid.uuid4().int % 10**6:06d}"
    fix = (
        f"The staging deploy failed with error {code} because the edge TLS certificate "
        "had expired; fixed by running certbot renew on the edge host."
    )
    asked = f"The staging deploy failed with error {code} again this morning. Why?"
    llm.script = Script(
        tool="memory_search", args={"query": "staging deploy TLS error"}, reply=fix, only_if=code
    )
    first = key()
    live.gateway.turn(first, asked)
    wait_for(lambda: retained(live.workspace, "certbot renew"), "the learning in the Retain")
    facts = rpc(live.brain, "recall", query=f"staging deploy error {code}", k=5, record=False)
    assert any(code in r["text"] for r in facts["results"])
    # what the assistant said is its claim, what the user said theirs: speaker, session, turn
    found = facts_saying(live.brain, code)
    said = {f["speaker"]: f for f in found}
    assert len(found) == 2 and set(said) == {"user", "assistant"}, (first, found)
    claim, theirs = said["assistant"], said["user"]
    assert "certbot renew" in claim["content"] and "again this morning" in theirs["content"]
    assert claim["session"] == first == theirs["session"], (first, found)
    assert 1 <= theirs["turn"] < claim["turn"]
    assert retained(live.workspace, f"B(by=assistant, session={first}, turn={claim['turn']})")
    # the run's answer cited nothing: its traces (its memory_search) get no outcome
    traced = [e for e in events(live.brain, "query_traced") if e["chat_id"] == first]
    assert traced
    scored = {e["trace_id"] for e in events(live.brain, "outcome_recorded")}
    assert not scored & {e["trace_id"] for e in traced}
    # next turn: a question about it gets the fact injected
    llm.script = Script(reply="Renew the certificate.")
    marker = f"How was the staging deploy error {code} fixed?"
    live.gateway.turn(key("subagent"), marker)
    prompt = user_text(turn_requests(llm, marker)[0])
    block = re.search(r"<ocb-memory>.*?</ocb-memory>", prompt, re.S)
    assert block is not None and "again this morning" in block.group(0), prompt[:3000]
    assert re.search(r"\[memory/\d{4}-\d{2}-\d{2}\.md#L\d+", block.group(0))
    # the claim, unconfirmed, comes after what the user said, marked as a claim
    text = block.group(0)
    if "certbot renew" in text:
        assert text.index("again this morning") < text.index("certbot renew")
        head = text[: text.index("certbot renew")].rsplit("\n[", 1)[-1].split("\n")[0]
        assert head.endswith("(an agent's claim, unconfirmed)"), text


def test_an_answer_credits_the_chunk_it_cites_and_the_route_fires_it_next(
    live: Live, llm: FakeLlm
) -> None:
    """The model searches, then answers citing one fired chunk that is not the first: the
    run's outcome credits that chunk alone (``used``), and the question's next search
    fires it."""
    question = "who handles the on-call handoff and the alerting rules"
    before = rpc(live.brain, "query", text=question, top=6, record=False)
    fired = [r for r in before["results"] if r["fired"]]
    assert len(fired) >= 2, before
    chosen = fired[-1]
    cite = chosen["source"]
    llm.script = Script(
        tool="memory_search", args={"query": question}, reply=f"Page the on-call ({cite})."
    )
    session = key()
    live.gateway.turn(session, f"{question}? ({uuid.uuid4().hex[:8]})")
    traces = [e for e in events(live.brain, "query_traced") if e["chat_id"] == session]
    assert len(traces) == 1 and chosen["id"] in traces[0]["fired"]
    mine = [
        e for e in events(live.brain, "outcome_recorded") if e["trace_id"] == traces[0]["trace_id"]
    ]
    assert len(mine) == 1, mine
    assert mine[0]["source"] == "self" and mine[0]["reward"] == 1.0
    assert mine[0]["used"] == [chosen["id"]] and mine[0]["cited"] == [cite]
    after = rpc(live.brain, "query", text=question, top=6, record=False)
    assert chosen["id"] in after["fired"], after["fired"]
    assert not set(after["fired"]) & {r["id"] for r in fired[:-1]}


def test_memory_recall_answers_typed_facts_recorded_as_the_plugins(
    live: Live, llm: FakeLlm
) -> None:
    llm.script = Script(tool="memory_recall", args={"query": "what do we know about Priya"})
    marker = f"recall priya {uuid.uuid4().hex[:8]}"
    live.gateway.turn(key(), marker)
    got = [r for b in turn_requests(llm, marker) for r in tool_results(b)][0]
    assert got["results"] and got["trace_id"], got
    assert any("Priya" in r["text"] for r in got["results"])
    recs = rpc(live.brain, "events", types=["recall_traced"], limit=100_000)
    assert [r["actor"] for r in recs if r["event"]["trace_id"] == got["trace_id"]] == ["plugin"]


def test_a_turn_completes_and_the_tool_fails_open_without_a_daemon(
    live: Live, llm: FakeLlm
) -> None:
    # the daemon stopped and the plugin's ocb failing like a missing command
    off = live.ocb.parent / "ocb.off"
    stop_daemon(live.ocb, live.brain)
    off.touch()
    try:
        llm.script = Script(tool="memory_search", args={"query": "anything"}, reply="Carry on.")
        marker = f"hello without memory {uuid.uuid4().hex[:8]}"
        answer = live.gateway.turn(key("subagent"), marker)
        assert answer["status"] == "ok"
        bodies = turn_requests(llm, marker)
        assert all("<ocb-memory>" not in user_text(b) for b in bodies)
        got = [r for b in bodies for r in tool_results(b)][0]
        assert got["results"] == [] and got["disabled"] is True and got["unavailable"] is True
        assert "cannot start the ocb daemon" in got["error"]
        assert "cannot start the ocb daemon" in live.gateway.host_log()
    finally:
        off.unlink()
        start_daemon(live.ocb, live.brain, live.workspace)


def test_the_plugin_type_checks_strictly_against_the_hosts_types(
    openclaw_root: Path, tmp_path: Path
) -> None:
    host = openclaw_root / "host" / "node_modules"
    config = {
        "extends": str(PLUGIN / "tsconfig.json"),
        "compilerOptions": {
            "paths": {"openclaw/plugin-sdk/*": [str(host / "openclaw/dist/plugin-sdk/*.d.ts")]},
            "typeRoots": [str(host / "@types")],
        },
        "files": [str(PLUGIN / "index.ts"), str(PLUGIN / "test" / "units.test.ts")],
    }
    (tmp_path / "tsconfig.json").write_text(json.dumps(config))
    done = Gateway(openclaw_root, tmp_path, 0).run(
        "tsc", "-p", str(tmp_path / "tsconfig.json"), "--strict", "--noEmit"
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_plugins_units_pass_under_node(openclaw_root: Path, tmp_path: Path) -> None:
    test = PLUGIN / "test" / "units.test.ts"
    done = Gateway(openclaw_root, tmp_path, 0).run(
        "node", "--test", "--test-reporter=tap", str(test)
    )
    cases = len(re.findall(r"^test\(", test.read_text(), re.M))
    assert done.returncode == 0 and f"# pass {cases}\n" in done.stdout, done.stdout + done.stderr
    assert "# fail 0\n" in done.stdout


def test_openclaw_brain_search_answers_through_the_daemon(live: Live) -> None:
    done = live.gateway.openclaw("brain", "search", "how", "do", "I", "roll", "back", "--top", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    got = json.loads(done.stdout[done.stdout.index("{") :])
    assert got["query"] == "how do I roll back"
    assert got["results"] and got["results"][0]["path"] == "runbooks/rollback.md"


def test_tool_hints_fill_a_tools_params_from_the_knowledge_graph(live: Live, llm: FakeLlm) -> None:
    rpc(live.brain, "kg", action="set", subject="tool:ls", predicate="path", value="notes")
    try:
        llm.script = Script(tool="ls", args={})
        marker = f"list what is there {uuid.uuid4().hex[:8]}"
        live.gateway.turn(key(), marker)
        listing = "\n".join(t for b in turn_requests(llm, marker) for t in tool_texts(b))
        assert "glossary.md" in listing and "MEMORY.md" not in listing, listing[:2000]
    finally:
        rpc(live.brain, "kg", action="set", subject="tool:ls", predicate="path", value=".")


def test_the_hosts_mcp_servers_run_ocb_mcp_and_a_turn_calls_its_tool(
    live: Live, llm: FakeLlm
) -> None:
    """OpenClaw's own ``mcp.servers`` spawns ``ocb mcp`` (attached to the daemon the plugin
    started); the model calls its tool as ``ocb__memory_search`` and gets cited lines."""
    llm.script = Script(
        tool="ocb__memory_search", args={"query": "how do I roll back a bad deploy"}
    )
    marker = f"search the brain over mcp {uuid.uuid4().hex[:8]}"
    answer = live.gateway.turn(key(), marker)
    assert answer["status"] == "ok"
    bodies = turn_requests(llm, marker)
    offered = {t["function"]["name"] for b in bodies for t in b.get("tools") or []}
    assert "ocb__memory_search" in offered and "ocb__memory_get" in offered
    texts = [t for b in bodies for t in tool_texts(b)]
    assert texts, "the model never got the MCP tool's result"
    text = texts[0]
    # the host may add more content after the tool's JSON: read the first object
    got, _ = json.JSONDecoder().raw_decode(text[text.index("{") :]) if "{" in text else ({}, 0)
    hits = got.get("results") or []
    assert hits and hits[0]["path"] == "runbooks/rollback.md", text[:2000]
    h = hits[0]
    assert h["citation"] == f"{h['path']}#L{h['startLine']}-L{h['endLine']}"
    assert got["trace_id"]
    traced = rpc(live.brain, "events", types=["query_traced"], limit=100_000)
    assert any(r["event"]["trace_id"] == got["trace_id"] for r in traced)


def test_the_plugin_starts_its_daemon_importing_nothing_from_the_hosts_directory(
    openclaw_root: Path, tmp_path: Path
) -> None:
    """The host runs in a directory holding a ``replay.py`` that leaves a mark when
    imported and a folder named ``ocb``; the plugin starts the daemon through the
    installed ``ocb`` command, as a user configures it."""
    ws = tmp_path / "ws"
    shutil.copytree(ROOT / "examples" / "workspace", ws)
    (tmp_path / "ocb").mkdir()
    (tmp_path / "ocb" / "entry.py").write_text("raise SystemExit('the planted ocb ran')\n")
    mark = tmp_path / "planted-ran"
    (tmp_path / "replay.py").write_text(f"open({str(mark)!r}, 'w').write('ran')\n")
    installed = Path(sys.executable).parent / "ocb"
    write_config(tmp_path, ws, free_port(), free_port(), {"ocb": str(installed)})
    gw = Gateway(openclaw_root, tmp_path, 0)
    gw.env.pop("PYTHONPATH", None)
    try:
        done = gw.openclaw("brain", "search", "how", "do", "I", "roll", "back", "--top", "3")
        assert done.returncode == 0, done.stdout + done.stderr
        got = json.loads(done.stdout[done.stdout.index("{") :])
        assert got["results"] and got["results"][0]["path"] == "runbooks/rollback.md"
        assert not mark.exists()
    finally:
        stop_daemon(installed, ws / ".ocb")
        clean_tmp_openclaw()
