// The memory tools: memory_search and memory_get with the envelopes of OpenClaw's own
// memory, and memory_recall, memory_retain and memory_feedback (each behind its config
// key). A tool never throws into the host: every failure answers the tool's documented
// envelope, and what the plugin records names its actor, "plugin".
import type { Settings } from "./config.ts";
import { ACTOR, type Daemon, DaemonError, type Logger, errorText } from "./daemon.ts";
import { DEFAULT_LINES, PathRefused, type ReadAnswer, cleanPath, excerptOfRead, resolveInWorkspace } from "./files.ts";
import type { Found } from "./recall.ts";
import type { Sessions } from "./sessions.ts";

const KINDS = ["W", "B", "O", "S"];

/** What a tool's factory gets from the host (the fields the plugin reads). */
export type ToolContext = { workspaceDir?: string; sessionKey?: string; sessionId?: string };

export type ToolDeps = {
  settings: Settings;
  logger: Logger;
  sessions: Sessions;
  daemonFor: (workspaceDir: string | undefined) => Daemon | null;
  workspaceOf: (workspaceDir: string | undefined) => string | null;
};

type Params = Record<string, unknown>;
type Result = { content: { type: "text"; text: string }[]; details: unknown };
type Tool = { name: string; label: string; description: string; parameters: never; execute: (id: string, params: Params) => Promise<Result> };
type Register = (factory: (ctx: ToolContext) => Tool, opts: { name: string }) => void;

export function jsonResult(payload: unknown): Result {
  return { content: [{ type: "text", text: JSON.stringify(payload, null, 2) }], details: payload };
}

/** No daemon answered (none could be started, or it did not answer in time). */
function unreachable(err: unknown): boolean {
  return err instanceof DaemonError && typeof err.code === "string";
}

/** The error's fields for an envelope: its message, the daemon's hint, and whether the memory was unavailable. */
function why(err: unknown): Params {
  const hint = err instanceof DaemonError && err.hint ? { hint: err.hint } : {};
  return { ...(unreachable(err) ? { unavailable: true } : {}), error: errorText(err), ...hint };
}

function tool(
  deps: ToolDeps,
  spec: { name: string; label: string; description: string; parameters: object },
  failure: (err: unknown, params: Params) => Params,
  run: (ctx: ToolContext, id: string, params: Params) => Promise<unknown>,
): (ctx: ToolContext) => Tool {
  return (ctx) => ({
    ...spec,
    parameters: spec.parameters as never,
    async execute(id: string, raw: Params) {
      const params: Params = raw && typeof raw === "object" ? raw : {};
      try {
        return jsonResult(await run(ctx, id, params));
      } catch (err) {
        deps.logger.warn(`ocb-memory: ${spec.name} failed open: ${errorText(err)}`);
        return jsonResult(failure(err, params));
      }
    },
  });
}

function daemonOf(deps: ToolDeps, ctx: ToolContext): Daemon {
  const d = deps.daemonFor(ctx.workspaceDir);
  if (!d) throw new DaemonError("no workspace: set agents.defaults.workspace or the plugin's workspace", "ENOWORKSPACE");
  return d;
}

function text(v: unknown): string {
  return typeof v === "string" ? v.trim() : "";
}

function strings(v: unknown): string[] | undefined {
  return Array.isArray(v) ? v.filter((s): s is string => typeof s === "string" && s.trim() !== "") : undefined;
}

function whole(v: unknown, dflt: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  return typeof v === "number" && Number.isFinite(v) ? Math.min(max, Math.max(min, Math.floor(v))) : dflt;
}

function unit(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) ? Math.min(1, Math.max(0, v)) : undefined;
}

const search = (deps: ToolDeps) =>
  tool(
    deps,
    {
      name: "memory_search",
      label: "Memory search",
      description:
        "Search the memory (OpenClawBrain, a learning graph over the workspace's Markdown) before answering about prior work, decisions, errors and fixes, people, preferences or todos. Hits cite path#L lines; read more with memory_get.",
      parameters: {
        type: "object",
        properties: { query: { type: "string" }, maxResults: { type: "integer", minimum: 1 }, minScore: { type: "number" } },
        required: ["query"],
        additionalProperties: false,
      },
    },
    (err) => ({ results: [], disabled: true, unavailable: true, error: errorText(err) }),
    async (ctx, _id, params) => {
      const query = text(params.query);
      if (!query) throw new Error("query is empty");
      const max = whole(params.maxResults, 6, 1);
      const least = typeof params.minScore === "number" && Number.isFinite(params.minScore) ? { min_score: params.minScore } : {};
      const d = daemonOf(deps, ctx);
      const found = await d.call<Found>("search", { text: query, top: max, chat_id: ctx.sessionKey ?? "", actor: ACTOR, style: "openclaw", ...least });
      deps.sessions.traced(ctx.sessionKey, found);
      return { results: found.results, provider: "openclawbrain", citations: "on", mode: "graph", trace_id: found.trace_id };
    },
  );

const get = (deps: ToolDeps) =>
  tool(
    deps,
    {
      name: "memory_get",
      label: "Memory get",
      description: `Read lines of a workspace file (a memory_search hit's path): from (1-based) and lines (default ${DEFAULT_LINES}). Paths outside the workspace are refused.`,
      parameters: {
        type: "object",
        properties: { path: { type: "string" }, from: { type: "integer", minimum: 1 }, lines: { type: "integer", minimum: 1 } },
        required: ["path"],
        additionalProperties: false,
      },
    },
    (err, params) => {
      const path = typeof params.path === "string" ? params.path : "";
      if (unreachable(err)) return { path, text: "", disabled: true, unavailable: true, error: errorText(err) };
      const refused = err instanceof PathRefused || (err instanceof DaemonError && err.refused);
      return { path, text: "", status: "error", code: refused ? "PATH_REFUSED" : "MEMORY_READ_FAILED", error: errorText(err) };
    },
    async (ctx, _id, params) => {
      const rel = typeof params.path === "string" ? params.path : "";
      const workspace = deps.workspaceOf(ctx.workspaceDir);
      if (!workspace) throw new PathRefused("no workspace");
      resolveInWorkspace(workspace, rel); // refused here before any request
      const d = daemonOf(deps, ctx);
      const from = whole(params.from, 1, 1);
      const lines = whole(params.lines, DEFAULT_LINES, 1);
      return excerptOfRead(await d.call<ReadAnswer>("read", { path: cleanPath(rel), from, lines }));
    },
  );

const recallTool = (deps: ToolDeps) =>
  tool(
    deps,
    {
      name: "memory_recall",
      label: "Memory recall",
      description:
        'Recall typed facts (W world facts, B experiences, O opinions with confidence, S summaries) about entities, a period or a question: "what do we know about X", "what happened last week", "what did we decide". Each result has its text, kind, entities, day, score and source (path#L). What an agent said is a claim, ranked below what the workspace shows.',
      parameters: {
        type: "object",
        properties: {
          query: { type: "string" },
          kinds: { type: "array", items: { type: "string", enum: KINDS } },
          entities: { type: "array", items: { type: "string" } },
          since: { type: "string", description: "7d, 2026-01-31, last week" },
          depth: { type: "integer", minimum: 0, maximum: 3 },
          limit: { type: "integer", minimum: 1, maximum: 100 },
        },
        additionalProperties: false,
      },
    },
    (err) => ({ results: [], disabled: true, ...why(err), unavailable: true }),
    async (ctx, _id, params) => {
      const kinds = strings(params.kinds)?.filter((k) => KINDS.includes(k));
      const entities = strings(params.entities);
      const since = text(params.since);
      const got = await daemonOf(deps, ctx).call<{ trace_id?: string; results?: unknown[] }>("recall", {
        query: text(params.query),
        k: whole(params.limit, 10, 1, 100),
        depth: whole(params.depth, 0, 0, 3),
        ...(kinds && kinds.length ? { kinds } : {}),
        ...(entities && entities.length ? { entities } : {}),
        ...(since ? { since } : {}),
        actor: ACTOR,
      });
      return { results: got.results ?? [], trace_id: got.trace_id ?? "" };
    },
  );

const retainTool = (deps: ToolDeps) =>
  tool(
    deps,
    {
      name: "memory_retain",
      label: "Memory retain",
      description:
        "Remember a durable fact for later sessions: a decision, a preference, a lesson learned, a fact about a person or a system. It is written into today's daily note (## Retain) as your claim (speaker assistant, this session), ranked below the workspace's evidence until an outcome confirms it. Returns the fact's id and where it was written.",
      parameters: {
        type: "object",
        properties: {
          content: { type: "string", description: "The fact, in one sentence." },
          type: { type: "string", enum: KINDS, description: "W world fact, B experience, O opinion, S summary" },
          entities: { type: "array", items: { type: "string" } },
          salience: { type: "number", minimum: 0, maximum: 1 },
          confidence: { type: "number", minimum: 0, maximum: 1 },
        },
        required: ["content"],
        additionalProperties: false,
      },
    },
    (err) => ({ retained: false, ...why(err) }),
    async (ctx, _id, params) => {
      const content = text(params.content);
      if (!content) throw new Error("content is empty: give the fact in one sentence");
      const kind = typeof params.type === "string" && KINDS.includes(params.type) ? params.type : "W";
      const entities = strings(params.entities);
      const salience = unit(params.salience);
      const confidence = unit(params.confidence);
      const got = await daemonOf(deps, ctx).call<Params>("retain", {
        content,
        kind,
        ...(entities && entities.length ? { entities } : {}),
        ...(salience !== undefined ? { salience } : {}),
        ...(confidence !== undefined ? { confidence } : {}),
        speaker: "assistant",
        session: ctx.sessionKey ?? ctx.sessionId ?? "",
        actor: ACTOR,
      });
      return { retained: true, ...got };
    },
  );

const feedbackTool = (deps: ToolDeps) =>
  tool(
    deps,
    {
      name: "memory_feedback",
      label: "Memory feedback",
      description:
        "Report how a memory_search turned out, so the memory learns what leads to what is needed: reward +1 when its hits helped, -1 when they misled or missed, between for partial help. With a positive reward, cited lists the citations (path#L) of the hits your answer used. Name the search by its trace_id (default: this session's latest search). Returns what was learned.",
      parameters: {
        type: "object",
        properties: {
          reward: { type: "number", minimum: -1, maximum: 1 },
          trace_id: { type: "string" },
          cited: { type: "array", items: { type: "string" } },
        },
        required: ["reward"],
        additionalProperties: false,
      },
    },
    (err) => ({ recorded: false, ...why(err) }),
    async (ctx, id, params) => {
      if (typeof params.reward !== "number" || !Number.isFinite(params.reward)) throw new Error("reward must be a number from -1 to 1");
      const reward = Math.min(1, Math.max(-1, params.reward));
      const trace = text(params.trace_id);
      const key = ctx.sessionKey ?? "";
      if (!trace && !key) throw new Error("no search to score: pass the trace_id a memory_search returned");
      const cited = reward > 0 ? (strings(params.cited) ?? []) : [];
      const got = await daemonOf(deps, ctx).call<{ trace_id?: string }>("learn", {
        outcome: reward,
        ...(trace ? { trace_id: trace } : { chat_id: key }),
        ...(cited.length ? { cited } : {}),
        source: "self",
        request_id: `ocb-memory:feedback:${id}`,
        actor: ACTOR,
      });
      if (got.trace_id && key) deps.sessions.get(key).scored.add(got.trace_id);
      return got;
    },
  );

/** Register the memory tools the settings turn on; the names registered, in order. */
export function registerTools(register: Register, deps: ToolDeps): string[] {
  const chosen: [string, (deps: ToolDeps) => (ctx: ToolContext) => Tool][] = [
    ["memory_search", search],
    ["memory_get", get],
  ];
  if (deps.settings.recallTool) chosen.push(["memory_recall", recallTool]);
  if (deps.settings.retainTool) chosen.push(["memory_retain", retainTool]);
  if (deps.settings.feedbackTool) chosen.push(["memory_feedback", feedbackTool]);
  for (const [name, make] of chosen) register(make(deps), { name });
  return chosen.map(([name]) => name);
}
