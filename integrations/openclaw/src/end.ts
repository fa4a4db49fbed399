// agent_end: what a finished run records through the daemon, as the plugin's: the outcome
// of each of its recall traces (crediting what its answer cited and read) and the
// learnings of its new messages (claims of their speakers).
import type { Settings } from "./config.ts";
import { ACTOR, type Daemon, type Logger, errorText } from "./daemon.ts";
import { runExtractor } from "./learnings.ts";
import { type Learning, type Trace, attribute, learningsOf, outcomesOf, said, succeeded, usedBy } from "./run.ts";

/** A finished run: its session, the host's event, its new messages (from `offset`) and its traces. */
export type Run = {
  key: string;
  event: { success?: unknown; error?: unknown };
  fresh: unknown[];
  offset: number;
  traces: Trace[];
};

/** The run's learnings: the surprise sentences, and what the extractor prints for each speaker. */
async function learningsOfRun(s: Settings, messages: unknown[], offset: number): Promise<Learning[]> {
  const texts = said(messages, offset);
  if (texts.map((t) => t.text).join("\n").length < s.minCaptureChars) return [];
  const found = learningsOf(texts);
  if (s.extractorCommand.length > 0) {
    for (const speaker of ["user", "assistant"] as const) {
      const mine = texts.filter((t) => t.speaker === speaker).map((t) => t.text);
      if (mine.length === 0) continue;
      found.push(...attribute(await runExtractor(s.extractorCommand, mine.join("\n")), texts, speaker));
    }
  }
  const seen = new Set<string>();
  return found.filter((l) => !seen.has(l.content) && !!seen.add(l.content));
}

/** One request; false (and a warning) when it failed. */
async function sent(d: Daemon, logger: Logger, method: string, params: Record<string, unknown>, what: string): Promise<boolean> {
  try {
    await d.call(method, params);
    return true;
  } catch (err) {
    logger.warn(`ocb-memory: ${what} not recorded: ${errorText(err)}`);
    return false;
  }
}

/** Record what the run teaches; how many outcomes and learnings were recorded. */
export async function recordRun(d: Daemon, s: Settings, logger: Logger, run: Run): Promise<{ scored: number; kept: number }> {
  const success = succeeded(run.event, run.fresh);
  let scored = 0;
  let kept = 0;
  if (s.learnFromOutcomes) {
    for (const o of outcomesOf(run.traces, success, s.failureReward, usedBy(run.fresh))) {
      const cited = o.cited.length > 0 ? { cited: o.cited } : {};
      const params = { outcome: o.outcome, trace_id: o.trace, ...cited, source: "self", request_id: `ocb-memory:${o.trace}`, actor: ACTOR };
      if (await sent(d, logger, "learn", params, `the outcome of ${o.trace}`)) scored++;
    }
  }
  if (!s.capture || !success) return { scored, kept };
  for (const l of await learningsOfRun(s, run.fresh, run.offset)) {
    const params = { content: l.content, kind: "B", speaker: l.speaker, session: run.key, turn: l.turn, actor: ACTOR };
    if (await sent(d, logger, "retain", params, "a learning")) kept++;
  }
  return { scored, kept };
}
