// The plugin's settings (plugins.entries.ocb-memory.config), with their defaults.
import { join, resolve } from "node:path";

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

export function readSettings(raw: Record<string, unknown> | undefined): Settings {
  const c = raw ?? {};
  const inject = c.inject === "all" || c.inject === "off" ? c.inject : "subagents";
  const extractor = Array.isArray(c.extractorCommand)
    ? c.extractorCommand.filter((a): a is string => typeof a === "string")
    : [];
  const brain = str(c.brain);
  const workspace = str(c.workspace);
  return {
    ...(brain ? { brain } : {}),
    ...(workspace ? { workspace } : {}),
    ocb: str(c.ocb) ?? "ocb",
    budgetChars: Math.max(0, Math.floor(num(c.budgetChars, 2000))),
    inject,
    capture: bool(c.capture, true),
    learnFromOutcomes: bool(c.learnFromOutcomes, true),
    failureReward: Math.min(1, Math.max(-1, num(c.failureReward, 0))),
    toolHints: bool(c.toolHints, false),
    extractorCommand: extractor,
    minCaptureChars: Math.max(0, Math.floor(num(c.minCaptureChars, 80))),
    timeoutMs: Math.max(100, Math.floor(num(c.timeoutMs, 5000))),
  };
}

/** The workspace and brain for a turn: configured ones first, else the agent's workspace. */
export function locate(
  s: Settings,
  workspaceDir: string | undefined,
  expand: (p: string) => string,
): { workspace: string; brain: string } | null {
  const ws = s.workspace ? expand(s.workspace) : workspaceDir;
  if (!ws) return null;
  const workspace = resolve(ws);
  const brain = s.brain ? resolve(expand(s.brain)) : join(workspace, ".ocb");
  return { workspace, brain };
}
