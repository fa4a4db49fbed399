// Per-session state, in the host's process: how many transcript messages agent_end has
// seen, the recall traces awaiting the run's outcome, and the traces the model already
// scored itself (memory_feedback), which agent_end leaves alone.
import type { Trace } from "./run.ts";

export type Session = { seen: number; traces: Trace[]; scored: Set<string> };

const MAX_SESSIONS = 10_000;

/** The sessions by key; the least recently used are forgotten past MAX_SESSIONS. */
export class Sessions {
  private readonly map = new Map<string, Session>();

  get(key: string): Session {
    let s = this.map.get(key);
    if (s) {
      this.map.delete(key);
    } else {
      s = { seen: 0, traces: [], scored: new Set() };
    }
    this.map.set(key, s);
    if (this.map.size > MAX_SESSIONS) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
    return s;
  }

  /** Remember a recall of `key`'s run: its trace and the sources of what fired. */
  traced(key: string | undefined, answer: { trace_id?: string; fired?: string[] }): void {
    if (!key || !answer.trace_id) return;
    this.get(key).traces.push({ id: answer.trace_id, fired: answer.fired ?? [] });
  }
}
