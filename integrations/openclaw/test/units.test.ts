// The plugin's pure parts, under node:test (Node 24 runs TypeScript by stripping types).
import assert from "node:assert/strict";
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promptSection } from "../src/prompt.ts";
import { test } from "node:test";
import { Daemon, DaemonError, rawCall } from "../src/daemon.ts";
import { PathRefused, excerptOfRead, resolveInWorkspace } from "../src/files.ts";
import { mergeHint } from "../src/hints.ts";
import { extractLearnings, messageText } from "../src/learnings.ts";
import { parseSource, stripContext } from "../src/recall.ts";
import { citationsIn, finalAnswer, formatSpan, readsIn, touches } from "../src/citations.ts";
import { locate, readSettings } from "../src/config.ts";
import { type Trace, attribute, learningsOf, outcomesOf, said, succeeded, usedBy } from "../src/run.ts";
import { Sessions } from "../src/sessions.ts";
import { type ToolDeps, registerTools } from "../src/tools.ts";

function workspace(): string {
  const root = mkdtempSync(join(tmpdir(), "ocb-plugin-"));
  mkdirSync(join(root, "ws", "notes"), { recursive: true });
  writeFileSync(join(root, "ws", "notes", "a.md"), "one\ntwo\nthree\nfour\n");
  writeFileSync(join(root, "secret.md"), "outside\n");
  symlinkSync(join(root, "secret.md"), join(root, "ws", "notes", "out.md"));
  symlinkSync(join(root, "ws", "notes", "a.md"), join(root, "ws", "in.md"));
  return join(root, "ws");
}

test("memory_get refuses paths out of the workspace", () => {
  const ws = workspace();
  const real = resolveInWorkspace(ws, "notes/a.md#L2-L3");
  assert.equal(readFileSync(real, "utf8"), "one\ntwo\nthree\nfour\n");
  assert.equal(resolveInWorkspace(ws, "in.md"), real, "a link inside the workspace is followed");
  for (const bad of ["../secret.md", "notes/../../secret.md", "/etc/passwd", "notes/out.md", "missing.md", ""]) {
    assert.throws(() => resolveInWorkspace(ws, bad), PathRefused, bad);
  }
});

test("sources split into path and lines (hits and the context block come shaped by the daemon)", () => {
  assert.deepEqual(parseSource("runbooks/rollback.md#L12-L20"), { path: "runbooks/rollback.md", startLine: 12, endLine: 20 });
  assert.deepEqual(parseSource("a.md#L3"), { path: "a.md", startLine: 3, endLine: 3 });
  assert.deepEqual(parseSource("inject:c1"), { path: "inject:c1", startLine: 0, endLine: 0 });
  assert.equal(stripContext("a<ocb-memory>\nrecalled\n</ocb-memory>b"), "ab");
});

test("learnings are the surprise sentences of user and assistant text, without recalled context", () => {
  const text = messageText({ role: "assistant", content: [{ type: "text", text: "<ocb-memory>\nThe old deploy failed with error X.\n</ocb-memory>\nI looked around. The build failed with error E42 because node 20 lacks node:sqlite; fixed by installing node 24. All good now." }] });
  assert.deepEqual(extractLearnings(text), ["The build failed with error E42 because node 20 lacks node:sqlite; fixed by installing node 24."]);
  assert.equal(messageText({ role: "toolResult", content: "error everywhere in this tool output" }), "");
  assert.deepEqual(extractLearnings("Nothing surprising happened here today at all."), []);
});

test("tool hints fill what the model left out and never replace what it set", () => {
  const p: Record<string, unknown> = { env: { HOME: "/root" }, size: 3 };
  mergeHint(p, "env", "DISPLAY=:0");
  mergeHint(p, "size", "5");
  mergeHint(p, "quality", "high");
  mergeHint(p, "vars", "A=1");
  mergeHint(p, "limit", "20");
  mergeHint(p, "force", "true");
  assert.deepEqual(p, { env: { HOME: "/root", DISPLAY: ":0" }, size: 3, quality: "high", vars: { A: "1" }, limit: 20, force: true });
});

test("a daemon that cannot be started fails the call, is reported once, and is not retried at once", async () => {
  const root = mkdtempSync(join(tmpdir(), "ocb-plugin-"));
  const ocb = join(root, "ocb");
  writeFileSync(ocb, `#!/bin/sh\necho started >> "${root}/starts"\necho "error: no such brain" >&2\nexit 1\n`);
  chmodSync(ocb, 0o755);
  const errors: string[] = [];
  const logger = { info: () => undefined, warn: () => undefined, error: (m: string) => void errors.push(m) };
  const d = new Daemon({ brain: join(root, "brain"), workspace: join(root, "ws"), ocb, timeoutMs: 1000, logger });
  for (let i = 0; i < 3; i++) {
    await assert.rejects(d.call("query", { text: "x" }), (err: unknown) => {
      assert.ok(err instanceof DaemonError && err.message.includes("cannot start the ocb daemon"));
      assert.ok(err.message.includes("no such brain"));
      return true;
    });
  }
  assert.equal(readFileSync(join(root, "starts"), "utf8"), "started\n");
  assert.equal(errors.length, 1);
});

test("a daemon read becomes the excerpt, cut at a line past 20,000 characters", () => {
  const got = excerptOfRead({ path: "notes/a.md", from: 2, to: 3, total_lines: 4, text: "two\nthree" });
  assert.deepEqual(got, { path: "notes/a.md", from: 2, lines: 2, totalLines: 4, text: "two\nthree", truncated: true, nextFrom: 4 });
  const empty = excerptOfRead({ path: "a.md", from: 9, to: 8, total_lines: 4, text: "" });
  assert.equal(empty.lines, 0);
  const long = excerptOfRead({ path: "b.md", from: 1, to: 3, total_lines: 3, text: ["x".repeat(15_000), "y".repeat(15_000), "z"].join("\n") });
  assert.equal(long.lines, 1);
  assert.equal(long.nextFrom, 2);
});

test("a daemon whose socket path is over the kernel's limit is reached through its directory", async () => {
  const run = join(mkdtempSync(join(tmpdir(), "ocb-plugin-")), "d".repeat(60), "e".repeat(60), "run");
  mkdirSync(run, { recursive: true });
  const socketPath = join(run, "ocb.sock");
  assert.ok(Buffer.byteLength(socketPath) > 108);
  const server = createServer((conn) => {
    conn.setEncoding("utf8");
    conn.on("data", (line: string) => {
      const req = JSON.parse(line) as { id: number };
      conn.end(JSON.stringify({ jsonrpc: "2.0", id: req.id, result: { pid: 7 } }) + "\n");
    });
  });
  const dir = openSync(run, "r"); // the daemon binds the same way
  await new Promise<void>((resolve) => server.listen(`/proc/self/fd/${dir}/ocb.sock`, resolve));
  closeSync(dir);
  try {
    assert.deepEqual(await rawCall(socketPath, "hello", {}, 5000), { pid: 7 });
  } finally {
    server.close();
  }
});

test("an answer's path#L citations are parsed, whatever surrounds them", () => {
  const text = [
    "Roll back with the runbook (runbooks/rollback.md#L4-L6) and see [memory/2026-01-02.md#L4].",
    "Also `notes/a b.md#L1`, ./notes/glossary.md#L10-12, MEMORY.md#L3-L3; again runbooks/rollback.md#L4-L6.",
    "Not these: /etc/passwd#L1, ../up.md#L2, a.md#L0, https://x.io/y#Lz, plain.md",
  ].join("\n");
  assert.deepEqual(citationsIn(text).map(formatSpan), [
    "runbooks/rollback.md#L4-L6",
    "memory/2026-01-02.md#L4",
    "b.md#L1",
    "notes/glossary.md#L10-L12",
    "MEMORY.md#L3",
  ]);
  assert.deepEqual(citationsIn("a.md#L9-L2"), [{ path: "a.md", start: 9, end: 9 }]);
  assert.deepEqual(citationsIn("nothing cited here"), []);
});

test("a run's reads are its memory_get results that read lines, and its answer is the last assistant text", () => {
  const messages: unknown[] = [
    { role: "user", content: "how do I roll back?" },
    { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "memory_get", arguments: { path: "runbooks/rollback.md" } }] },
    { role: "toolResult", toolCallId: "c1", toolName: "memory_get", isError: false, content: [{ type: "text", text: "{}" }], details: { path: "runbooks/rollback.md", from: 3, lines: 4, totalLines: 9, text: "x" } },
    { role: "toolResult", toolCallId: "c2", toolName: "memory_get", isError: false, content: [{ type: "text", text: JSON.stringify({ path: "notes/a.md", from: 1, lines: 2 }) }] },
    { role: "toolResult", toolCallId: "c3", toolName: "memory_get", isError: false, content: [], details: { path: ".env", text: "", status: "error", code: "PATH_REFUSED" } },
    { role: "toolResult", toolCallId: "c4", toolName: "memory_get", isError: true, content: [], details: { path: "x.md", from: 1, lines: 3 } },
    { role: "toolResult", toolCallId: "c5", toolName: "ocb__memory_get", isError: false, content: [], details: { path: "notes/b.md", from: 5, to: 7 } },
    { role: "toolResult", toolCallId: "c6", toolName: "memory_search", isError: false, content: [], details: { path: "no.md", from: 1, lines: 1 } },
    { role: "assistant", content: [{ type: "text", text: "See runbooks/rollback.md#L4." }] },
    { role: "assistant", content: [{ type: "toolCall", id: "c7", name: "ls", arguments: {} }] },
  ];
  assert.deepEqual(readsIn(messages).map(formatSpan), ["runbooks/rollback.md#L3-L6", "notes/a.md#L1-L2", "notes/b.md#L5-L7"]);
  assert.equal(finalAnswer(messages), "See runbooks/rollback.md#L4.");
  assert.deepEqual(usedBy(messages).map(formatSpan), ["runbooks/rollback.md#L4", "runbooks/rollback.md#L3-L6", "notes/a.md#L1-L2", "notes/b.md#L5-L7"]);
});

test("a success credits only the traces whose fired results the answer cited; a failure gives failureReward", () => {
  const traces: Trace[] = [
    { id: "t-inject", fired: ["notes/glossary.md#L1-L20", "runbooks/deploy.md#L1-L9"] },
    { id: "t-search", fired: ["runbooks/rollback.md#L1-L12", "runbooks/rollback.md#L13-L30"] },
    { id: "t-empty", fired: [] },
  ];
  const cited = citationsIn("Roll back: runbooks/rollback.md#L14-L15 (and memory/x.md#L1).");
  assert.deepEqual(outcomesOf(traces, true, -0.5, cited), [{ trace: "t-search", outcome: 1, cited: ["runbooks/rollback.md#L14-L15"] }]);
  assert.deepEqual(outcomesOf(traces, true, -0.5, []), []);
  assert.deepEqual(outcomesOf(traces, true, 0, [{ path: "notes/glossary.md", start: 0, end: 0 }]), [{ trace: "t-inject", outcome: 1, cited: ["notes/glossary.md"] }]);
  assert.deepEqual(
    outcomesOf(traces, false, -0.5, cited).map((o) => [o.trace, o.outcome, o.cited.length]),
    [["t-inject", -0.5, 0], ["t-search", -0.5, 0], ["t-empty", -0.5, 0]],
  );
  assert.ok(touches({ path: "a.md", start: 5, end: 5 }, "a.md#L5"));
  assert.ok(!touches({ path: "a.md", start: 6, end: 9 }, "a.md#L1-L5"));
  assert.ok(!touches({ path: "b.md", start: 1, end: 9 }, "a.md#L1-L5"));
});

test("learnings carry their speaker and their message's place in the transcript (from 1)", () => {
  const messages: unknown[] = [
    { role: "user", content: "The nightly backup failed with error E7 after the disk filled up." },
    { role: "assistant", content: [{ type: "text", text: "I think the deploy failed because the token expired; fixed by rotating it." }] },
    { role: "toolResult", content: "error: the tool failed loudly with an error" },
    { role: "assistant", content: [{ type: "text", text: "the nightly backup failed with error E7 after the disk filled up." }] },
  ];
  const texts = said(messages, 10);
  assert.deepEqual(texts.map((t) => [t.speaker, t.turn]), [["user", 11], ["assistant", 12], ["assistant", 14]]);
  assert.deepEqual(learningsOf(texts), [
    { content: "The nightly backup failed with error E7 after the disk filled up.", speaker: "user", turn: 11 },
    { content: "I think the deploy failed because the token expired; fixed by rotating it.", speaker: "assistant", turn: 12 },
  ]);
  assert.deepEqual(attribute(["the token expired", "something the extractor inferred"], texts, "assistant"), [
    { content: "the token expired", speaker: "assistant", turn: 12 },
    { content: "something the extractor inferred", speaker: "assistant", turn: 14 },
  ]);
  assert.deepEqual(attribute(["x"], said([], 0), "user"), []);
});

test("settings expand ~ only through the given home, and place a relative brain and workspace", () => {
  const home = (p: string): string => p.replace(/^~/, "/home/me");
  const s = readSettings({ brain: "~/brains/a", workspace: "notes", ocb: "~/bin/ocb", retainTool: true }, home);
  assert.equal(s.brain, "/home/me/brains/a");
  assert.equal(s.ocb, "/home/me/bin/ocb");
  assert.deepEqual([s.recallTool, s.retainTool, s.feedbackTool], [true, true, false]);
  assert.deepEqual(locate(s, "/agent/ws"), { workspace: "/agent/ws/notes", brain: "/home/me/brains/a" });
  // a host that answers nothing (a closed registration API) leaves the path as written
  const closed = readSettings({ brain: "~/b" }, () => undefined as unknown as string);
  assert.equal(closed.brain, "~/b");
  assert.deepEqual(locate(readSettings({ brain: "brain" }), "/ws"), { workspace: "/ws", brain: "/ws/brain" });
  assert.deepEqual(locate(readSettings({ brain: "/b" }), "/ws"), { workspace: "/ws", brain: "/b" });
  assert.equal(locate(readSettings({ workspace: "rel" }), undefined), null);
  assert.deepEqual(locate(readSettings({ workspace: "/w" }), undefined), { workspace: "/w", brain: "/w/.ocb" });
});

type Registered = { name: string; execute: (id: string, params: Record<string, unknown>) => Promise<{ details: unknown }> };

function toolsOver(daemonFor: ToolDeps["daemonFor"], raw: Record<string, unknown> = {}, workspaceOf: ToolDeps["workspaceOf"] = () => "/nowhere"): Map<string, Registered> {
  const got = new Map<string, Registered>();
  const logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
  const deps: ToolDeps = { settings: readSettings(raw), logger, sessions: new Sessions(), daemonFor, workspaceOf };
  registerTools((factory, opts) => got.set(opts.name, factory({ sessionKey: "agent:main:t-1" }) as unknown as Registered), deps);
  return got;
}

test("every tool answers its envelope whatever fails, and never throws", async () => {
  const all = { retainTool: true, feedbackTool: true };
  assert.deepEqual([...toolsOver(() => null).keys()], ["memory_search", "memory_get", "memory_recall"]);
  const fail = (): never => {
    throw new TypeError('The "paths[0]" argument must be of type string. Received undefined');
  };
  const broken = toolsOver(fail, all, fail);
  assert.deepEqual([...broken.keys()], ["memory_search", "memory_get", "memory_recall", "memory_retain", "memory_feedback"]);
  const args: Record<string, Record<string, unknown>> = {
    memory_search: { query: "q" }, memory_get: { path: "a.md" }, memory_recall: { query: "q" },
    memory_retain: { content: "a fact" }, memory_feedback: { reward: 1 },
  };
  const want: Record<string, Record<string, unknown>> = {
    memory_search: { results: [], disabled: true, unavailable: true },
    memory_get: { path: "a.md", text: "", status: "error", code: "MEMORY_READ_FAILED" },
    memory_recall: { results: [], disabled: true, unavailable: true },
    memory_retain: { retained: false },
    memory_feedback: { recorded: false },
  };
  for (const [name, t] of broken) {
    const got = (await t.execute("call-1", args[name] ?? {})).details as Record<string, unknown>;
    assert.match(String(got.error), /paths\[0\]/, name);
    for (const [k, v] of Object.entries(want[name] ?? {})) assert.deepEqual(got[k], v, `${name}.${k}`);
  }
  // no workspace, and bad params: the same envelopes, each saying why
  const none = toolsOver(() => null, all, () => null);
  for (const [name, t] of none) {
    const got = (await t.execute("call-2", undefined as unknown as Record<string, unknown>)).details as Record<string, unknown>;
    assert.equal(typeof got.error, "string", name);
  }
  const search = (await none.get("memory_search")?.execute("c", { query: "x" }))?.details as Record<string, unknown>;
  assert.deepEqual(search, { results: [], disabled: true, unavailable: true, error: "no workspace: set agents.defaults.workspace or the plugin's workspace" });
});

test("the tools send what they record as the plugin's, and memory_feedback's trace is left to it", async () => {
  const run = join(mkdtempSync(join(tmpdir(), "ocb-plugin-")), "run");
  mkdirSync(run);
  const seen: { method: string; params: Record<string, unknown> }[] = [];
  const server = createServer((conn) => {
    conn.setEncoding("utf8");
    conn.on("data", (line: string) => {
      const req = JSON.parse(line) as { id: number; method: string; params: Record<string, unknown> };
      seen.push({ method: req.method, params: req.params });
      const result = req.method === "hello" ? { protocol: 1 }
        : req.method === "search" ? { trace_id: "t9", query: "q", fired: ["a.md#L1-L2"], results: [{ path: "a.md", startLine: 1, endLine: 2, score: 1, snippet: "x\n\nSource: a.md#L1-L2", source: "memory", citation: "a.md#L1-L2" }] }
        : req.method === "learn" ? { trace_id: "t9", recorded: true }
        : { id: "f1" };
      conn.end(JSON.stringify({ jsonrpc: "2.0", id: req.id, result }) + "\n");
    });
  });
  await new Promise<void>((resolve) => server.listen(join(run, "ocb.sock"), resolve));
  const logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
  const d = new Daemon({ brain: dirname(run), workspace: "/nowhere", ocb: "false", timeoutMs: 5000, logger });
  try {
    const tools = toolsOver(() => d, { retainTool: true, feedbackTool: true });
    const hits = (await tools.get("memory_search")?.execute("c1", { query: "q" }))?.details as { trace_id: string };
    assert.equal(hits.trace_id, "t9");
    await tools.get("memory_retain")?.execute("c2", { content: "Deploys need the VPN.", type: "W" });
    await tools.get("memory_feedback")?.execute("c3", { reward: 1, cited: ["a.md#L1"] });
    await tools.get("memory_feedback")?.execute("c4", { reward: -1, cited: ["a.md#L1"], trace_id: "t9" });
    const sent = seen.filter((s) => s.method !== "hello");
    assert.deepEqual(sent.map((s) => [s.method, s.params.actor]), [["search", "plugin"], ["retain", "plugin"], ["learn", "plugin"], ["learn", "plugin"]]);
    assert.deepEqual(sent[1]?.params, { content: "Deploys need the VPN.", kind: "W", speaker: "assistant", session: "agent:main:t-1", actor: "plugin" });
    assert.deepEqual(sent[2]?.params, { outcome: 1, chat_id: "agent:main:t-1", cited: ["a.md#L1"], source: "self", request_id: "ocb-memory:feedback:c3", actor: "plugin" });
    assert.deepEqual(sent[3]?.params, { outcome: -1, trace_id: "t9", source: "self", request_id: "ocb-memory:feedback:c4", actor: "plugin" });
  } finally {
    server.close();
  }
});

test("a run whose model request failed is a failure, though the host says success", () => {
  const asked = { role: "user", content: "q" };
  const answered = { role: "assistant", content: [{ type: "text", text: "a" }], stopReason: "stop" };
  const broke = { role: "assistant", content: [], stopReason: "error", errorMessage: "400" };
  assert.equal(succeeded({ success: true }, [asked, answered]), true);
  assert.equal(succeeded({ success: true }, [asked, broke]), false);
  assert.equal(succeeded({ success: true }, [asked, { ...broke, stopReason: "aborted" }]), false);
  assert.equal(succeeded({ success: false }, [asked, answered]), false);
  assert.equal(succeeded({ success: true, error: "timed out" }, [asked, answered]), false);
  assert.equal(succeeded({ success: true }, [asked]), true);
});

test("the prompt section names the tools the run has and never says context was recalled", () => {
  assert.deepEqual(promptSection(new Set(["exec"])), []);
  const some = promptSection(new Set(["memory_search", "memory_get"])).join("\n");
  const all = promptSection(new Set(["memory_search", "memory_get", "memory_recall", "memory_retain", "memory_feedback"])).join("\n");
  assert.ok(some.includes("memory_search") && !some.includes("memory_recall") && !some.includes("memory_retain"));
  for (const name of ["memory_recall", "memory_retain", "memory_feedback"]) assert.ok(all.includes(name), name);
  assert.ok(!/recalled/i.test(all));
});
