// The plugin's pure parts, under node:test (Node 24 runs TypeScript by stripping types).
import assert from "node:assert/strict";
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { Daemon, DaemonError, rawCall } from "../src/daemon.ts";
import { PathRefused, excerptOfRead, readExcerpt } from "../src/files.ts";
import { mergeHint } from "../src/hints.ts";
import { extractLearnings, messageText } from "../src/learnings.ts";
import { type Answer, contextBlock, parseSource, toHits } from "../src/recall.ts";

function workspace(): string {
  const root = mkdtempSync(join(tmpdir(), "ocb-plugin-"));
  mkdirSync(join(root, "ws", "notes"), { recursive: true });
  writeFileSync(join(root, "ws", "notes", "a.md"), "one\ntwo\nthree\nfour\n");
  writeFileSync(join(root, "secret.md"), "outside\n");
  symlinkSync(join(root, "secret.md"), join(root, "ws", "notes", "out.md"));
  symlinkSync(join(root, "ws", "notes", "a.md"), join(root, "ws", "in.md"));
  return join(root, "ws");
}

test("memory_get reads lines and refuses paths out of the workspace", () => {
  const ws = workspace();
  const got = readExcerpt(ws, "notes/a.md", 2, 2);
  assert.deepEqual(got, { path: "notes/a.md", from: 2, lines: 2, totalLines: 4, text: "two\nthree", truncated: true, nextFrom: 4 });
  assert.equal(readExcerpt(ws, "in.md").text, "one\ntwo\nthree\nfour");
  for (const bad of ["../secret.md", "notes/../../secret.md", "/etc/passwd", "notes/out.md", "missing.md", ""]) {
    assert.throws(() => readExcerpt(ws, bad), PathRefused, bad);
  }
});

test("sources split into path and lines; hits carry citations", () => {
  assert.deepEqual(parseSource("runbooks/rollback.md#L12-L20"), { path: "runbooks/rollback.md", startLine: 12, endLine: 20 });
  assert.deepEqual(parseSource("a.md#L3"), { path: "a.md", startLine: 3, endLine: 3 });
  assert.deepEqual(parseSource("inject:c1"), { path: "inject:c1", startLine: 0, endLine: 0 });
  const answer: Answer = {
    trace_id: "t1", query: "q", fired: ["a"], context_chars: 0,
    results: [
      { id: "a", source: "a.md#L1-L2", text: "x".repeat(900), score: 0.91234, fired: true, kind: "chunk" },
      { id: "b", source: "b.md#L5", text: "short", score: 0.1, fired: false, kind: "chunk" },
    ],
  };
  const hits = toHits(answer, 6, 0.2);
  assert.equal(hits.length, 1);
  assert.equal(hits[0]?.citation, "a.md#L1-L2");
  assert.ok(hits[0]?.snippet.endsWith("\n\nSource: a.md#L1-L2"));
  assert.ok((hits[0]?.snippet.length ?? 0) <= 700 + "\n\nSource: a.md#L1-L2".length);
  for (const budget of [300, 500, 2000]) {
    const block = contextBlock(answer, budget);
    assert.ok(block.text.length <= budget, `${block.text.length} > ${budget}`);
    assert.ok(block.text.includes("[a.md#L1-L2]"));
    assert.ok(!block.text.includes("b.md"), "a chunk that did not fire is not injected");
  }
  assert.equal(contextBlock(answer, 100).text, "");
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
