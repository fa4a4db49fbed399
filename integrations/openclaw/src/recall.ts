// What the plugin reads of the daemon's query answers: `search` answers with memory_search
// hits and `context` with the cited block before_prompt_build prepends, both shaped by
// the daemon (ocb.wire.search), so the plugin shapes nothing itself. Here: the answers'
// types, the split of a citation into its path and lines, and how to find the block in
// a transcript (its tags) to leave it out of what is learned.

/** A memory_search hit, shaped by the daemon like OpenClaw's own memory's (style "openclaw"). */
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

/** The `search` method's answer: the hits, and the sources of the results that fired. */
export type Found = { trace_id: string; query: string; fired: string[]; results: Hit[] };

/** The `context` method's answer: the block ("" when nothing fired), and what fired. */
export type Recalled = { trace_id: string; fired: string[]; text: string; used: string[] };

/** `path#L12-L20` (or `path#L12`) split into its path and lines; other sources keep line 0. */
export function parseSource(source: string): { path: string; startLine: number; endLine: number } {
  const m = /^(.*)#L(\d+)(?:-L(\d+))?$/.exec(source);
  if (!m) return { path: source, startLine: 0, endLine: 0 };
  const start = Number(m[2]);
  return { path: m[1] ?? source, startLine: start, endLine: m[3] ? Number(m[3]) : start };
}

/** Text with every injected block removed (so captured learnings never echo recalled memory). */
export function stripContext(text: string): string {
  return text.replace(/<ocb-memory>[\s\S]*?<\/ocb-memory>/g, "");
}
