// Drives the OpenClaw plugin's hooks in Node, as the host calls them: loads the plugin's
// entry, registers it against a recording api, then times before_prompt_build (plugin ->
// daemon -> prependContext) and runs agent_end after each turn.
// Usage: node openclaw_driver.mjs PLUGIN_ENTRY SPEC.json > results.json
// SPEC: {workspace, config, latency: [questions], repeat: {task, runs}, reply}
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

const [entryPath, specPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, "utf8"));
const entry = (await import(entryPath)).default;
const hooks = new Map();
const tools = new Map();
const quiet = { info() {}, warn: (m) => process.stderr.write(`${m}\n`), error: (m) => process.stderr.write(`${m}\n`) };
const api = {
  pluginConfig: spec.config,
  config: { agents: { defaults: { workspace: spec.workspace } } },
  logger: quiet,
  resolvePath: (p) => p,
  registerMemoryCapability() {},
  registerService() {},
  registerCli() {},
  registerTool(factory, opts) { tools.set(opts.name, factory); },
  on(name, handler) { hooks.set(name, handler); },
};
entry.register(api);
const build = hooks.get("before_prompt_build");
const end = hooks.get("agent_end");
const search = tools.get("memory_search")({ workspaceDir: spec.workspace, sessionKey: "agent:main:bench" });

async function turn(sessionKey, text) {
  const ctx = { sessionKey, agentId: "main", workspaceDir: spec.workspace, runId: sessionKey };
  const t0 = performance.now();
  const out = await build({ prompt: text, currentUserMessage: text, messages: [] }, ctx);
  const ms = performance.now() - t0;
  return { ms, ctx, context: out?.prependContext ?? "" };
}

const result = { latency: [], chars: [], repeat: [] };
let n = 0;
for (const q of spec.latency) {
  const { ms, ctx, context } = await turn(`agent:main:subagent:lat-${n++}`, q);
  result.latency.push(ms);
  const tool = await search.execute("call", { query: q });
  const hits = JSON.parse(tool.content[0].text).results;
  result.chars.push({ injected: context.length, memory_search_6x700: hits.reduce((a, h) => a + h.snippet.length, 0), hits: hits.length });
  await end({ messages: [], success: true }, ctx);
}
for (let i = 0; i < (spec.repeat?.runs ?? 0); i++) {
  const { ms, ctx, context } = await turn(`agent:main:subagent:rep-${i}`, spec.repeat.task);
  const sources = [...context.matchAll(/^\[([^\]]+)\]$/gm)].map((m) => m[1]);
  result.repeat.push({ run: i + 1, ms, chars: context.length, sources });
  const messages = [
    { role: "user", content: spec.repeat.task },
    // a good answer cites what it used: here the first chunk of its context
    { role: "assistant", content: [{ type: "text", text: sources.length ? `${spec.reply} (${sources[0]})` : spec.reply }] },
  ];
  await end({ messages, success: true, runId: ctx.runId }, ctx);
}
process.stdout.write(JSON.stringify(result));
