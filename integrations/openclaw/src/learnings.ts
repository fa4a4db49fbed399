// What a finished run taught: sentences of its new messages that report a surprise (an
// error, a failure and its fix, a workaround, a limit, a requirement), found by patterns,
// plus whatever an optional extractor command prints.
import { execFile } from "node:child_process";
import { stripContext } from "./recall.ts";

export const SURPRISE =
  /\b(error|errors|failed|fails|failure|workaround|worked around|fixed by|fix was|the fix|solved by|resolved by|rate[- ]limit(?:ed)?|deprecated|requires|required|must be|must not|instead of|turns out|root cause|timed? out|not supported)\b/i;

const MIN_SENTENCE = 24;
const MAX_SENTENCE = 400;
export const MAX_LEARNINGS = 5;

type Block = { type?: unknown; text?: unknown };
type Message = { role?: unknown; content?: unknown };

/** The text a user or assistant message carries (tool results are not learnings). */
export function messageText(message: unknown): string {
  if (!message || typeof message !== "object") return "";
  const m = message as Message;
  if (m.role !== "user" && m.role !== "assistant") return "";
  if (typeof m.content === "string") return stripContext(m.content);
  if (!Array.isArray(m.content)) return "";
  const parts: string[] = [];
  for (const block of m.content as Block[]) {
    if (block && block.type === "text" && typeof block.text === "string") parts.push(block.text);
  }
  return stripContext(parts.join("\n"));
}

function sentences(text: string): string[] {
  return text
    .split(/\n+|(?<=[.!?])\s+(?=[A-Z0-9`"'(])/)
    .map((s) => s.replace(/^[\s>*#-]+/, "").replace(/\s+/g, " ").trim())
    .filter((s) => s.length >= MIN_SENTENCE && s.length <= MAX_SENTENCE);
}

/** The surprise sentences of `text`, in order, without repeats, at most MAX_LEARNINGS. */
export function extractLearnings(text: string): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const s of sentences(text)) {
    if (!SURPRISE.test(s)) continue;
    const key = s.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(s);
    if (out.length >= MAX_LEARNINGS) break;
  }
  return out;
}

/** Lines an extractor command prints for `text` on its stdin (20 s at most; [] on failure). */
export function runExtractor(argv: string[], text: string): Promise<string[]> {
  const [cmd, ...args] = argv;
  if (!cmd) return Promise.resolve([]);
  return new Promise((resolve) => {
    const child = execFile(cmd, args, { timeout: 20_000, maxBuffer: 1 << 20 }, (err, stdout) => {
      if (err) {
        resolve([]);
        return;
      }
      resolve(
        stdout
          .split("\n")
          .map((l) => l.replace(/^[\s*-]+/, "").trim())
          .filter((l) => l.length >= MIN_SENTENCE && l.length <= MAX_SENTENCE)
          .slice(0, MAX_LEARNINGS),
      );
    });
    child.stdin?.end(text);
  });
}
