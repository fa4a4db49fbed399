// The daemon's query answers as OpenClaw's memory envelopes (memory_search hits) and as the
// cited context block that before_prompt_build prepends.

/** One item of `query`'s `results` (see the README's "JSON output"). */
export type QueryResult = {
  id: string;
  source: string;
  text: string;
  score: number;
  fired: boolean;
  kind: string;
  /** Lines of what an assistant said that nothing confirmed (ranked after the evidence). */
  claim?: boolean;
};

export type Answer = {
  trace_id: string;
  query: string;
  results: QueryResult[];
  fired: string[];
  context_chars: number;
};

/** A memory_search hit, shaped like OpenClaw's own memory's. */
export type Hit = {
  path: string;
  startLine: number;
  endLine: number;
  score: number;
  snippet: string;
  source: "memory";
  citation: string;
  claim?: true;
};

export const SNIPPET_MAX_CHARS = 700;

/** `path#L12-L20` (or `path#L12`) split into its path and lines; other sources keep line 0. */
export function parseSource(source: string): { path: string; startLine: number; endLine: number } {
  const m = /^(.*)#L(\d+)(?:-L(\d+))?$/.exec(source);
  if (!m) return { path: source, startLine: 0, endLine: 0 };
  const start = Number(m[2]);
  return { path: m[1] ?? source, startLine: start, endLine: m[3] ? Number(m[3]) : start };
}

export function citation(path: string, startLine: number, endLine: number): string {
  if (startLine <= 0) return path;
  return startLine === endLine ? `${path}#L${startLine}` : `${path}#L${startLine}-L${endLine}`;
}

/** The answer's results as hits, best first, at most `max`, none scoring under `minScore`. */
export function toHits(answer: Answer, max: number, minScore = -Infinity): Hit[] {
  const hits: Hit[] = [];
  for (const r of answer.results) {
    if (hits.length >= max) break;
    if (r.score < minScore) continue;
    const { path, startLine, endLine } = parseSource(r.source);
    const cite = citation(path, startLine, endLine);
    const text = r.text.length > SNIPPET_MAX_CHARS ? `${r.text.slice(0, SNIPPET_MAX_CHARS - 1)}…` : r.text;
    hits.push({
      path,
      startLine,
      endLine,
      score: Math.round(r.score * 1e4) / 1e4,
      snippet: `${text.trimEnd()}\n\nSource: ${cite}`,
      source: "memory",
      citation: cite,
      ...(r.claim ? { claim: true as const } : {}),
    });
  }
  return hits;
}

export const CONTEXT_OPEN = "<ocb-memory>";
export const CONTEXT_CLOSE = "</ocb-memory>";
const HEADER =
  "Recalled from memory (OpenClawBrain) for this turn: prefer it over guessing. Cite what you use as path#L; ask memory_search for more.";
/** How the block marks lines an assistant said that nothing confirmed. */
export const CLAIM_MARK = " (an agent's claim, unconfirmed)";

/**
 * The fired results as a cited block of at most `budget` characters (tags included):
 * whole chunks while they fit, then the next one cut to what is left, claims marked as
 * such; "" when nothing fired.
 */
export function contextBlock(answer: Answer, budget: number): { text: string; used: QueryResult[] } {
  const fixed = CONTEXT_OPEN.length + HEADER.length + CONTEXT_CLOSE.length + 2;
  let left = budget - fixed;
  const parts: string[] = [];
  const used: QueryResult[] = [];
  for (const r of answer.results) {
    if (!r.fired) continue;
    const head = `\n[${r.source}]${r.claim ? CLAIM_MARK : ""}\n`;
    const room = left - head.length;
    if (room < 80) break;
    const body = r.text.trim();
    const cut = body.length > room ? `${body.slice(0, room - 1)}…` : body;
    parts.push(head + cut);
    used.push(r);
    left -= head.length + cut.length;
  }
  if (parts.length === 0) return { text: "", used };
  return { text: `${CONTEXT_OPEN}\n${HEADER}${parts.join("")}\n${CONTEXT_CLOSE}`, used };
}

/** Text with every injected block removed (so captured learnings never echo recalled memory). */
export function stripContext(text: string): string {
  return text.replace(/<ocb-memory>[\s\S]*?<\/ocb-memory>/g, "");
}
