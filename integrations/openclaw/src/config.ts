// The plugin's settings (plugins.entries.ocb-memory.config), with their defaults, and
// where a turn's workspace and brain are.
import { isAbsolute, join, resolve } from "node:path";

export type InjectMode = "subagents" | "all" | "off";

export type Settings = {
  brain?: string;
  workspace?: string;
  ocb: string;
  budgetChars: number;
  inject: InjectMode;
  capture: boolean;
  learnFromOutcomes: boolean;
  failureReward: number;
  toolHints: boolean;
  extractorCommand: string[];
  minCaptureChars: number;
  timeoutMs: number;
  recallTool: boolean;
  retainTool: boolean;
  feedbackTool: boolean;
};

function str(v: unknown): string | undefined {
  return typeof v === "string" && v.trim() ? v.trim() : undefined;
}

function num(v: unknown, dflt: number): number {
  return typeof v === "number" && Number.isFinite(v) ? v : dflt;
}

function bool(v: unknown, dflt: boolean): boolean {
  return typeof v === "boolean" ? v : dflt;
}

/**
 * The settings of a raw config. `home` expands a leading `~` of the paths (`brain`,
 * `workspace`, `ocb`); it is called here, while the plugin registers, and never later
 * (the host's `api.resolvePath` answers nothing once registration is over).
 */
export function readSettings(raw: Record<string, unknown> | undefined, home: (p: string) => string = (p) => p): Settings {
  const c = raw ?? {};
  const inject = c.inject === "all" || c.inject === "off" ? c.inject : "subagents";
  const extractor = Array.isArray(c.extractorCommand)
    ? c.extractorCommand.filter((a): a is string => typeof a === "string")
    : [];
  const tilde = (p: string | undefined): string | undefined => {
    if (p === undefined || !p.startsWith("~")) return p;
    const got: unknown = home(p);
    return typeof got === "string" && got ? got : p;
  };
  const brain = tilde(str(c.brain));
  const workspace = tilde(str(c.workspace));
  return {
    ...(brain ? { brain } : {}),
    ...(workspace ? { workspace } : {}),
    ocb: tilde(str(c.ocb)) ?? "ocb",
    budgetChars: Math.max(0, Math.floor(num(c.budgetChars, 2000))),
    inject,
    capture: bool(c.capture, true),
    learnFromOutcomes: bool(c.learnFromOutcomes, true),
    failureReward: Math.min(1, Math.max(-1, num(c.failureReward, 0))),
    toolHints: bool(c.toolHints, false),
    extractorCommand: extractor,
    minCaptureChars: Math.max(0, Math.floor(num(c.minCaptureChars, 80))),
    timeoutMs: Math.max(100, Math.floor(num(c.timeoutMs, 5000))),
    recallTool: bool(c.recallTool, true),
    retainTool: bool(c.retainTool, false),
    feedbackTool: bool(c.feedbackTool, false),
  };
}

/**
 * The workspace and brain of a turn. The workspace is the configured one (a relative
 * path under the agent's workspace), else the agent's; the brain is the configured one
 * (a relative path under the workspace), else `<workspace>/.ocb`.
 */
export function locate(s: Settings, agentWorkspace: string | undefined): { workspace: string; brain: string } | null {
  const base = agentWorkspace ? resolve(agentWorkspace) : undefined;
  let workspace: string | undefined = base;
  if (s.workspace) workspace = isAbsolute(s.workspace) ? s.workspace : base && resolve(base, s.workspace);
  if (!workspace) return null;
  workspace = resolve(workspace);
  const brain = s.brain ? resolve(workspace, s.brain) : join(workspace, ".ocb");
  return { workspace, brain };
}
