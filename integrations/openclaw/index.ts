// OpenClawBrain as OpenClaw's memory plugin: a thin client of the `ocb serve` daemon.
//
// - memory_search / memory_get tools with the envelopes of OpenClaw's own memory, and
//   memory_recall / memory_retain / memory_feedback (src/tools.ts);
// - before_prompt_build: recall on the user's message, prepended with citations (gated by `inject`);
// - agent_end: the run's recall traces scored with its outcome (source "self"), crediting
//   what its answer cited and its memory_get calls read; the learnings of its new messages
//   retained in the daily log as claims of their speakers;
// - before_tool_call (toolHints): knowledge-graph facts about tool:<name> merged into its params;
// - `openclaw brain status|search|why`.
// Every daemon failure fails open: the turn goes on without memory, and the logger says why.
import { definePluginEntry } from "openclaw/plugin-sdk/plugin-entry";
import { isSubagentSessionKey } from "openclaw/plugin-sdk/routing";
import { locate, readSettings, type Settings } from "./src/config.ts";
import { ACTOR, Daemon, type Logger, errorText } from "./src/daemon.ts";
import { recordRun } from "./src/end.ts";
import { promptSection } from "./src/prompt.ts";
import type { Recalled } from "./src/recall.ts";
import { Sessions } from "./src/sessions.ts";
import { registerTools } from "./src/tools.ts";
import { registerBrainCli } from "./src/cli.ts";
import { mergeHint } from "./src/hints.ts";

const TOOL_HINT_MS = 50;

function isFirstTurn(messages: unknown[]): boolean {
  return !messages.some((m) => !!m && typeof m === "object" && (m as { role?: unknown }).role === "assistant");
}

function wantsInjection(s: Settings, sessionKey: string | undefined, messages: unknown[]): boolean {
  if (s.inject === "off") return false;
  if (s.inject === "all") return true;
  return isSubagentSessionKey(sessionKey) && isFirstTurn(messages);
}

export default definePluginEntry({
  id: "ocb-memory",
  name: "OpenClawBrain memory",
  description: "A learning memory graph over the workspace's Markdown, served by the ocb daemon",
  register(api) {
    // the host's resolvePath answers only while register() runs: expand paths now
    const settings = readSettings(api.pluginConfig, (p) => api.resolvePath(p));
    const logger: Logger = api.logger;
    const daemons = new Map<string, Daemon>();
    const sessions = new Sessions();
    const agentWorkspace = (dir: string | undefined): string | undefined => dir ?? api.config.agents?.defaults?.workspace;

    const daemonFor = (workspaceDir: string | undefined): Daemon | null => {
      const where = locate(settings, agentWorkspace(workspaceDir));
      if (!where) return null;
      let d = daemons.get(where.brain);
      if (!d) {
        d = new Daemon({ ...where, ocb: settings.ocb, timeoutMs: settings.timeoutMs, logger });
        daemons.set(where.brain, d);
      }
      return d;
    };

    api.registerMemoryCapability({ promptBuilder: ({ availableTools }) => promptSection(availableTools) });

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

    registerTools((factory, opts) => api.registerTool(factory, opts), {
      settings,
      logger,
      sessions,
      daemonFor,
      workspaceOf: (dir) => locate(settings, agentWorkspace(dir))?.workspace ?? null,
    });

    api.on("before_prompt_build", async (event, ctx) => {
      try {
        if (settings.budgetChars <= 0 || !wantsInjection(settings, ctx.sessionKey, event.messages)) return;
        const text = (event.currentUserMessage ?? event.prompt ?? "").trim();
        const d = daemonFor(ctx.workspaceDir);
        if (!text || !d) return;
        const recalled = await d.call<Recalled>("context", { text, top: 5, chat_id: ctx.sessionKey ?? "", actor: ACTOR, budget: settings.budgetChars });
        sessions.traced(ctx.sessionKey, recalled);
        return recalled.text ? { prependContext: recalled.text } : undefined;
      } catch (err) {
        logger.warn(`ocb-memory: recall skipped: ${errorText(err)}`);
        return;
      }
    });

    api.on("agent_end", async (event, ctx) => {
      const key = ctx.sessionKey ?? ctx.sessionId ?? "";
      let done = { scored: 0, kept: 0 };
      try {
        const s = sessions.get(key);
        const messages = Array.isArray(event.messages) ? (event.messages as unknown[]) : [];
        const offset = Math.min(s.seen, messages.length);
        s.seen = messages.length;
        const traces = s.traces.splice(0).filter((t) => !s.scored.has(t.id));
        const d = daemonFor(ctx.workspaceDir);
        if (d) done = await recordRun(d, settings, logger, { key, event, fresh: messages.slice(offset), offset, traces });
      } catch (err) {
        logger.warn(`ocb-memory: the run's outcome and learnings skipped: ${errorText(err)}`);
      } finally {
        logger.info(`ocb-memory: run of ${key} ended: ${done.scored} outcome(s), ${done.kept} learning(s) retained`);
      }
    });

    if (settings.toolHints) {
      api.on("before_tool_call", async (event) => {
        try {
          const d = daemonFor(undefined);
          if (!d || event.toolName.startsWith("memory_")) return;
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
