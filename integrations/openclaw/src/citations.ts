// What a run's answer used: the `path#L` citations of its final answer and the lines its
// memory_get calls read, as the daemon's `learn` takes them (`cited`), and which of them
// touch what a recall fired.
import { parseSource } from "./recall.ts";

/** Lines `start`..`end` (1-based, inclusive) of a workspace file; start 0: the whole file. */
export type Span = { path: string; start: number; end: number };

// a path (no spaces, brackets, quotes or colons) then #L12, #L12-L20 or #L12-20
const CITATION = /([^\s[\](){}<>"'`|*:#,;]+)#L(\d+)(?:-L?(\d+))?/g;

function workspacePath(raw: string): string | null {
  const path = raw.replace(/^(?:\.\/)+/, "");
  if (!path || path.startsWith("/") || path.split("/").includes("..")) return null;
  return path;
}

function span(rawPath: string, start: number, end: number): Span | null {
  const path = workspacePath(rawPath);
  if (!path || !Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 1) return null;
  return { path, start, end: Math.max(start, end) };
}

/** The `path#L` citations of a text, in order, without repeats. */
export function citationsIn(text: string): Span[] {
  const out: Span[] = [];
  for (const m of text.matchAll(CITATION)) {
    const start = Number(m[2]);
    const s = span(m[1] ?? "", start, m[3] ? Number(m[3]) : start);
    if (s) out.push(s);
  }
  return unique(out);
}

/** `path#L12-L20`, `path#L12` or `path` (the whole file). */
export function formatSpan(s: Span): string {
  if (s.start <= 0) return s.path;
  return s.start === s.end ? `${s.path}#L${s.start}` : `${s.path}#L${s.start}-L${s.end}`;
}

export function unique(spans: Span[]): Span[] {
  const seen = new Set<string>();
  return spans.filter((s) => {
    const k = formatSpan(s);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

type Block = { type?: unknown; text?: unknown; name?: unknown; id?: unknown };
type Message = { role?: unknown; content?: unknown; toolName?: unknown; isError?: unknown; details?: unknown };

function record(v: unknown): Record<string, unknown> | null {
  return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

/** The text blocks of a message, joined. */
function textOf(m: Message): string {
  if (typeof m.content === "string") return m.content;
  if (!Array.isArray(m.content)) return "";
  return (m.content as Block[])
    .filter((b) => b && b.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string)
    .join("\n");
}

/** The text of the last assistant message that has any: the run's final answer. */
export function finalAnswer(messages: unknown[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = record(messages[i]) as Message | null;
    if (m?.role !== "assistant") continue;
    const text = textOf(m).trim();
    if (text) return text;
  }
  return "";
}

/** What a memory_get answer says it read: `{path, from, lines}` (this plugin) or `{path, from, to}` (ocb mcp). */
function readOf(answer: Record<string, unknown>): Span | null {
  const { path, from, lines, to } = answer;
  if (typeof path !== "string" || typeof from !== "number" || answer.status === "error" || answer.disabled) return null;
  if (typeof lines === "number") return lines > 0 ? span(path, from, from + lines - 1) : null;
  if (typeof to === "number") return to >= from ? span(path, from, to) : null;
  return null;
}

function resultAnswer(m: Message): Record<string, unknown> | null {
  const details = record(m.details);
  if (details) return details;
  const text = textOf(m);
  const at = text.indexOf("{");
  if (at < 0) return null;
  try {
    return record(JSON.parse(text.slice(at)));
  } catch {
    return null;
  }
}

/** The lines the run's memory_get calls read (their results, failed reads left out), in order. */
export function readsIn(messages: unknown[]): Span[] {
  const out: Span[] = [];
  for (const raw of messages) {
    const m = record(raw) as Message | null;
    if (!m || m.role !== "toolResult" || m.isError === true) continue;
    if (typeof m.toolName !== "string" || !/(^|_)memory_get$/.test(m.toolName)) continue;
    const answer = resultAnswer(m);
    const s = answer ? readOf(answer) : null;
    if (s) out.push(s);
  }
  return unique(out);
}

/** Whether a span and a fired result's source (`path#L12-L20`) share a line (a whole-file span: a path). */
export function touches(s: Span, source: string): boolean {
  const got = parseSource(source);
  if (got.path !== s.path) return false;
  if (s.start <= 0 || got.startLine <= 0) return true;
  return s.start <= got.endLine && got.startLine <= s.end;
}
