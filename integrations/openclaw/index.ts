// OpenClawBrain as OpenClaw's memory plugin: a thin client of the `ocb serve` daemon.
//
// - memory_search / memory_get tools with the envelopes of OpenClaw's own memory;
// - before_prompt_build: recall on the user's message, prepended with citations (gated by `inject`);
// - agent_end: learnings of the run's new messages retained in the daily log, and the run's
//   recall traces scored with its outcome (source "self");
// - before_tool_call (toolHints): knowledge-graph facts about tool:<name> merged into its params;
// - `openclaw brain status|search|why`.
// Every daemon failure fails open: the turn goes on without memory, and the logger says why.
import { definePluginEntry } from "openclaw/plugin-sdk/plugin-entry";
import { isSubagentSessionKey } from "openclaw/plugin-sdk/routing";
import { locate, readSettings, type Settings } from "./src/config.ts";
import { Daemon, DaemonError, type Logger } from "./src/daemon.ts";
import { DEFAULT_LINES, PathRefused, type ReadAnswer, cleanPath, excerptOfRead, resolveInWorkspace } from "./src/files.ts";
import { extractLearnings, messageText, runExtractor } from "./src/learnings.ts";
import { type Answer, contextBlock, toHits } from "./src/recall.ts";
import { registerBrainCli } from "./src/cli.ts";
import { mergeHint } from "./src/hints.ts";

const TOOL_HINT_MS = 50;
const USER_ERROR = -32001; // the daemon's code for a refused request (its hint names the fix)

type Session = { seen: number; traces: string[] };

const MAX_SESSIONS = 10_000;

/**
 * Per-session state: how many transcript messages agent_end has seen, traces awaiting an
 * outcome. The least recently used sessions are forgotten past MAX_SESSIONS.
 */
class Sessions {
  private readonly map = new Map<string, Session>();
  get(key: string): Session {
    let s = this.map.get(key);
    if (s) {
      this.map.delete(key);
    } else {
      s = { seen: 0, traces: [] };
    }
    this.map.set(key, s);
    if (this.map.size > MAX_SESSIONS) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
    return s;
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function jsonResult(payload: unknown): { content: { type: "text"; text: string }[]; details: unknown } {
  return { content: [{ type: "text", text: JSON.stringify(payload, null, 2) }], details: payload };
}

function isFirstTurn(messages: unknown[]): boolean {
  return !messages.some((m) => !!m && typeof m === "object" && (m as { role?: unknown }).role === "assistant");
}

function wantsInjection(s: Settings, sessionKey: string | undefined, messages: unknown[]): boolean {
  if (s.inject === "off") return false;
  if (s.inject === "all") return true;
  return isSubagentSessionKey(sessionKey) && isFirstTurn(messages);
}

const PROMPT_SECTION = [
  "## Memory (OpenClawBrain)",
  "Before answering about prior work, decisions, errors and their fixes, people, preferences or todos: run memory_search; use memory_get to read only the lines you need.",
  "Context between <ocb-memory> tags was recalled for this turn; prefer it over guessing.",
  "Cite what you use as path#L (for example memory/2026-01-02.md#L4-L6). If memory is unavailable, say so and go on.",
  "",
];

export default definePluginEntry({
  id: "ocb-memory",
  name: "OpenClawBrain memory",
  description: "A learning memory graph over the workspace's Markdown, served by the ocb daemon",
  register(api) {
    const settings = readSettings(api.pluginConfig);
    const logger: Logger = api.logger;
    const daemons = new Map<string, Daemon>();
    const sessions = new Sessions();
    const expand = (p: string): string => api.resolvePath(p);

    const daemonFor = (workspaceDir: string | undefined): Daemon | null => {
      const where = locate(settings, workspaceDir ?? api.config.agents?.defaults?.workspace, expand);
      if (!where) return null;
      let d = daemons.get(where.brain);
      if (!d) {
        d = new Daemon({ ...where, ocb: settings.ocb, timeoutMs: settings.timeoutMs, logger });
        daemons.set(where.brain, d);
      }
      return d;
    };

    api.registerMemoryCapability({
      promptBuilder: ({ availableTools }) =>
        availableTools.has("memory_search") || availableTools.has("memory_get") ? PROMPT_SECTION : [],
    });

    api.registerService({
      id: "ocb-daemon",
      async start(ctx) {
        const d = daemonFor(ctx.workspaceDir);
        if (!d || (await d.alive())) return;
        // not awaited: the host's start-up does not wait for a brain to be built; a failure
        // is reported through the logger, and every request retries and fails open
        d.start().catch(() => undefined);
      },
    });

    api.registerTool(
      (ctx) => ({
        name: "memory_search",
        label: "Memory search",
        description:
          "Search the memory (OpenClawBrain, a learning graph over the workspace's Markdown) before answering about prior work, decisions, errors and fixes, people, preferences or todos. Hits cite path#L lines; read more with memory_get.",
        parameters: {
          type: "object",
          properties: {
            query: { type: "string" },
            maxResults: { type: "integer", minimum: 1 },
            minScore: { type: "number" },
          },
          required: ["query"],
          additionalProperties: false,
        } as never,
        async execute(_id: string, params: { query?: unknown; maxResults?: unknown; minScore?: unknown }) {
          const query = typeof params.query === "string" ? params.query.trim() : "";
          const max = typeof params.maxResults === "number" ? Math.max(1, Math.floor(params.maxResults)) : 6;
          const minScore = typeof params.minScore === "number" ? params.minScore : -Infinity;
          const d = daemonFor(ctx.workspaceDir);
          if (!query || !d) {
            return jsonResult({ results: [], disabled: true, unavailable: true, error: query ? "no workspace" : "query is empty" });
          }
          try {
            const answer = await d.call<Answer>("query", { text: query, top: max, chat_id: ctx.sessionKey ?? "" });
            if (answer.trace_id && ctx.sessionKey) sessions.get(ctx.sessionKey).traces.push(answer.trace_id);
            return jsonResult({ results: toHits(answer, max, minScore), provider: "openclawbrain", citations: "on", mode: "graph" });
          } catch (err) {
            logger.warn(`ocb-memory: memory_search failed open: ${errorText(err)}`);
            return jsonResult({ results: [], disabled: true, unavailable: true, error: errorText(err) });
          }
        },
      }),
      { name: "memory_search" },
    );

    api.registerTool(
      (ctx) => ({
        name: "memory_get",
        label: "Memory get",
        description: `Read lines of a workspace file (a memory_search hit's path): from (1-based) and lines (default ${DEFAULT_LINES}). Paths outside the workspace are refused.`,
        parameters: {
          type: "object",
          properties: {
            path: { type: "string" },
            from: { type: "integer", minimum: 1 },
            lines: { type: "integer", minimum: 1 },
          },
          required: ["path"],
          additionalProperties: false,
        } as never,
        async execute(_id: string, params: { path?: unknown; from?: unknown; lines?: unknown }) {
          const rel = typeof params.path === "string" ? params.path : "";
          const where = locate(settings, ctx.workspaceDir ?? api.config.agents?.defaults?.workspace, expand);
          const d = daemonFor(ctx.workspaceDir);
          try {
            if (!where || !d) throw new PathRefused("no workspace");
            resolveInWorkspace(where.workspace, rel); // refused here before any request
            const from = typeof params.from === "number" ? Math.max(1, Math.floor(params.from)) : 1;
            const lines = typeof params.lines === "number" ? Math.max(1, Math.floor(params.lines)) : DEFAULT_LINES;
            const got = await d.call<ReadAnswer>("read", { path: cleanPath(rel), from, lines });
            return jsonResult(excerptOfRead(got));
          } catch (err) {
            if (err instanceof DaemonError && typeof err.code === "string") {  // no daemon answer: fail open
              return jsonResult({ path: rel, text: "", disabled: true, unavailable: true, error: errorText(err) });
            }
            const refused = err instanceof PathRefused || (err instanceof DaemonError && err.code === USER_ERROR);
            const code = refused ? "PATH_REFUSED" : "MEMORY_READ_FAILED";
            return jsonResult({ path: rel, text: "", status: "error", code, error: errorText(err) });
          }
        },
      }),
      { name: "memory_get" },
    );

    api.on("before_prompt_build", async (event, ctx) => {
      if (settings.budgetChars <= 0 || !wantsInjection(settings, ctx.sessionKey, event.messages)) return;
      const text = (event.currentUserMessage ?? event.prompt ?? "").trim();
      const d = daemonFor(ctx.workspaceDir);
      if (!text || !d) return;
      try {
        const answer = await d.call<Answer>("query", { text, top: 5, chat_id: ctx.sessionKey ?? "" });
        if (answer.trace_id && ctx.sessionKey) sessions.get(ctx.sessionKey).traces.push(answer.trace_id);
        const block = contextBlock(answer, settings.budgetChars);
        return block.text ? { prependContext: block.text } : undefined;
      } catch (err) {
        logger.warn(`ocb-memory: recall skipped: ${errorText(err)}`);
        return;
      }
    });

    api.on("agent_end", async (event, ctx) => {
      const key = ctx.sessionKey ?? ctx.sessionId ?? "";
      const s = sessions.get(key);
      const messages = Array.isArray(event.messages) ? event.messages : [];
      const fresh = messages.slice(Math.min(s.seen, messages.length));
      s.seen = messages.length;
      const traces = s.traces.splice(0);
      const d = daemonFor(ctx.workspaceDir);
      if (!d) return;
      if (settings.learnFromOutcomes) {
        const outcome = event.success ? 1 : settings.failureReward;
        for (const trace of traces) {
          try {
            await d.call("learn", { outcome, trace_id: trace, source: "self", request_id: `ocb-memory:${trace}` });
          } catch (err) {
            logger.warn(`ocb-memory: outcome of ${trace} not recorded: ${errorText(err)}`);
          }
        }
      }
      if (!settings.capture || !event.success) return;
      const text = fresh.map(messageText).filter(Boolean).join("\n");
      if (text.length < settings.minCaptureChars) return;
      const found = extractLearnings(text);
      if (settings.extractorCommand.length > 0) found.push(...(await runExtractor(settings.extractorCommand, text)));
      for (const content of [...new Set(found)]) {
        try {
          await d.call("retain", { content, kind: "B" });
        } catch (err) {
          logger.warn(`ocb-memory: learning not retained: ${errorText(err)}`);
        }
      }
    });

    if (settings.toolHints) {
      api.on("before_tool_call", async (event) => {
        const d = daemonFor(api.config.agents?.defaults?.workspace);
        if (!d || event.toolName.startsWith("memory_")) return;
        try {
          const got = await d.callNoStart<{ facts?: { predicate: string; value: string }[] }>(
            "kg",
            { action: "get", subject: `tool:${event.toolName}` },
            TOOL_HINT_MS,
          );
          const facts = got.facts ?? [];
          if (facts.length === 0) return;
          const params = { ...event.params };
          for (const f of facts) mergeHint(params, f.predicate, f.value);
          return { params };
        } catch {
          return; // no answer within TOOL_HINT_MS: the call goes through untouched
        }
      });
    }

    registerBrainCli(api, settings, daemonFor);
  },
});
