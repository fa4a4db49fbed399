// What a finished run teaches: each recall trace's outcome (crediting only what the answer
// cited or read), and the learnings of its new messages as claims of their speakers.
import { type Span, citationsIn, finalAnswer, formatSpan, readsIn, touches, unique } from "./citations.ts";
import { MAX_LEARNINGS, extractLearnings, messageText } from "./learnings.ts";

/** A recall trace of the run and the sources (`path#L12-L20`) of the results that fired in it. */
export type Trace = { id: string; fired: string[] };

/** One `learn` to send: the trace, its outcome, and the citations that touch what it fired. */
export type Outcome = { trace: string; outcome: number; cited: string[] };

/**
 * Whether a run succeeded: the host says so, and its last assistant message did not end
 * in an error (a model's request that failed ends the run with `success` true and an
 * assistant message whose stopReason is "error").
 */
export function succeeded(event: { success?: unknown; error?: unknown }, messages: unknown[]): boolean {
  if (event.success !== true || (typeof event.error === "string" && event.error !== "")) return false;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: unknown; stopReason?: unknown } | null;
    if (m && typeof m === "object" && m.role === "assistant") return m.stopReason !== "error" && m.stopReason !== "aborted";
  }
  return true;
}

/** What the run used: its final answer's citations, then the lines its memory_get calls read. */
export function usedBy(messages: unknown[]): Span[] {
  return unique([...citationsIn(finalAnswer(messages)), ...readsIn(messages)]);
}

/**
 * The outcome of each trace. A failed run gives every trace `failureReward` (the whole
 * context failed: no citation needed). A successful run gives +1, with the citations
 * touching its fired results, to each trace whose fired results it cited or read, and
 * nothing to the others (no positive outcome to chunks the answer did not use).
 */
export function outcomesOf(traces: Trace[], success: boolean, failureReward: number, used: Span[]): Outcome[] {
  if (!success) return traces.map((t) => ({ trace: t.id, outcome: failureReward, cited: [] }));
  const out: Outcome[] = [];
  for (const t of traces) {
    const mine = used.filter((s) => t.fired.some((source) => touches(s, source)));
    if (mine.length > 0) out.push({ trace: t.id, outcome: 1, cited: mine.map(formatSpan) });
  }
  return out;
}

export type Speaker = "user" | "assistant";

/** A learning and who said it; its turn is its message's place in the transcript, from 1. */
export type Learning = { content: string; speaker: Speaker; turn: number };

function speakerOf(message: unknown): Speaker | null {
  const role = message && typeof message === "object" ? (message as { role?: unknown }).role : undefined;
  return role === "user" || role === "assistant" ? role : null;
}

/** The user and assistant texts of `messages` (the transcript from index `offset`), each with its speaker and turn (from 1). */
export function said(messages: unknown[], offset: number): { text: string; speaker: Speaker; turn: number }[] {
  const out: { text: string; speaker: Speaker; turn: number }[] = [];
  messages.forEach((m, i) => {
    const speaker = speakerOf(m);
    const text = speaker ? messageText(m).trim() : "";
    if (speaker && text) out.push({ text, speaker, turn: offset + i + 1 });
  });
  return out;
}

/** The surprise sentences of each message, in order, without repeats, at most MAX_LEARNINGS. */
export function learningsOf(texts: { text: string; speaker: Speaker; turn: number }[]): Learning[] {
  const seen = new Set<string>();
  const out: Learning[] = [];
  for (const t of texts) {
    for (const content of extractLearnings(t.text)) {
      const key = content.toLowerCase();
      if (seen.has(key) || out.length >= MAX_LEARNINGS) continue;
      seen.add(key);
      out.push({ content, speaker: t.speaker, turn: t.turn });
    }
  }
  return out;
}

/**
 * Lines an extractor printed for one speaker's text, as that speaker's learnings: the
 * turn is the speaker's message that holds the line, else the speaker's last message.
 */
export function attribute(lines: string[], texts: { text: string; speaker: Speaker; turn: number }[], speaker: Speaker): Learning[] {
  const mine = texts.filter((t) => t.speaker === speaker);
  const last = mine[mine.length - 1];
  if (!last) return [];
  return lines.map((content) => {
    const key = content.toLowerCase();
    const holder = mine.find((t) => t.text.toLowerCase().includes(key)) ?? last;
    return { content, speaker, turn: holder.turn };
  });
}
