// A thin JSON-RPC 2.0 client of `ocb serve`: one newline-delimited request per connection
// on BRAIN/run/ocb.sock, and a starter that runs `ocb serve --detach` when nothing answers.
import { execFile } from "node:child_process";
import { closeSync, existsSync, openSync } from "node:fs";
import { createConnection } from "node:net";
import { basename, dirname, join } from "node:path";

export const PROTOCOL = 1;
/** Who the plugin's requests that record something say they come from (their `actor`). */
export const ACTOR = "plugin";
/** How long a request waits for a daemon it had to start before failing open. */
export const START_WAIT_MS = 15_000;
/** After a failed start, requests fail open at once for this long before trying again. */
export const RETRY_START_MS = 10_000;

export type Logger = {
  info: (message: string) => void;
  warn: (message: string) => void;
  error: (message: string) => void;
};

/** An error the daemon answered with, or a failure to reach it. */
export class DaemonError extends Error {
  readonly code: number | string;
  readonly hint: string;
  /** The kind of a request the daemon refused (the brain's error, e.g. WorkspaceError); "" otherwise. */
  readonly kind: string;
  constructor(message: string, code: number | string, hint = "", kind = "") {
    super(message);
    this.code = code;
    this.hint = hint;
    this.kind = kind;
  }

  /** The daemon refused the request (its hint names the fix), rather than failing. */
  get refused(): boolean {
    return this.kind !== "";
  }
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** True when the error means no daemon listens (so one may be started). */
export function isUnreachable(err: unknown): boolean {
  const code = err instanceof DaemonError ? err.code : "";
  return code === "ENOENT" || code === "ECONNREFUSED" || code === "ENOTSOCK";
}

let nextId = 1;

/** The longest Unix socket path the kernel takes (sun_path is 108 bytes on Linux). */
const MAX_ADDRESS = 107;

/**
 * The address to connect `socketPath` by, and what to close once connected: the path
 * itself, or, when it is longer than the kernel takes, the same file reached through a
 * descriptor of its directory (/proc/self/fd/N/ocb.sock), as the daemon binds it.
 */
function address(socketPath: string): { path: string; release: () => void } {
  if (Buffer.byteLength(socketPath) <= MAX_ADDRESS) return { path: socketPath, release: () => undefined };
  const fd = openSync(dirname(socketPath), "r");
  let open = true;
  const release = (): void => {
    if (open) closeSync(fd);
    open = false;
  };
  return { path: `/proc/self/fd/${fd}/${basename(socketPath)}`, release };
}

/** One request over a fresh connection; rejects with DaemonError. */
export function rawCall(
  socketPath: string,
  method: string,
  params: Record<string, unknown>,
  timeoutMs: number,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const id = nextId++;
    let target: { path: string; release: () => void };
    try {
      target = address(socketPath);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "EIO";
      reject(new DaemonError(`cannot reach the ocb daemon at ${socketPath}: ${(err as Error).message}`, code));
      return;
    }
    const sock = createConnection(target.path);
    let buf = "";
    let done = false;
    const finish = (err: Error | null, value?: unknown): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      target.release();
      sock.destroy();
      if (err) reject(err);
      else resolve(value);
    };
    const timer = setTimeout(
      () => finish(new DaemonError(`ocb daemon did not answer ${method} in ${timeoutMs} ms`, "ETIMEDOUT")),
      timeoutMs,
    );
    sock.setEncoding("utf8");
    sock.on("connect", () => {
      target.release();
      sock.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    });
    sock.on("data", (chunk: string) => {
      buf += chunk;
      const nl = buf.indexOf("\n");
      if (nl < 0) return;
      let msg: { result?: unknown; error?: { code: number; message: string; data?: { hint?: string; kind?: string } } };
      try {
        msg = JSON.parse(buf.slice(0, nl)) as typeof msg;
      } catch {
        finish(new DaemonError("ocb daemon sent a line that is not JSON", "EPROTO"));
        return;
      }
      if (msg.error) finish(new DaemonError(msg.error.message, msg.error.code, msg.error.data?.hint ?? "", msg.error.data?.kind ?? ""));
      else finish(null, msg.result);
    });
    sock.on("error", (err: NodeJS.ErrnoException) => {
      finish(new DaemonError(`cannot reach the ocb daemon at ${socketPath}: ${err.message}`, err.code ?? "EIO"));
    });
    sock.on("close", () => finish(new DaemonError("ocb daemon closed the connection", "ECONNRESET")));
  });
}

export type DaemonOptions = {
  brain: string;
  workspace: string;
  ocb: string;
  timeoutMs: number;
  logger: Logger;
};

/** The daemon of one brain: calls it, and starts it once when none answers. */
export class Daemon {
  readonly socketPath: string;
  private checked = false;
  private starting: Promise<void> | null = null;
  private startFailure = "";
  private failedAt = 0;

  readonly opts: DaemonOptions;

  constructor(opts: DaemonOptions) {
    this.opts = opts;
    this.socketPath = join(opts.brain, "run", "ocb.sock");
  }

  /** Call `method`; when no daemon listens, start one (once at a time) and retry. */
  async call<T>(method: string, params: Record<string, unknown> = {}, timeoutMs?: number): Promise<T> {
    const limit = timeoutMs ?? this.opts.timeoutMs;
    try {
      await this.check(limit);
      return (await rawCall(this.socketPath, method, params, limit)) as T;
    } catch (err) {
      if (!isUnreachable(err) || timeoutMs !== undefined) throw err;
      this.checked = false;
      await this.startWithin(START_WAIT_MS);
      await this.check(limit);
      return (await rawCall(this.socketPath, method, params, limit)) as T;
    }
  }

  /** Only a call that needs no start: fails fast when nothing listens (tool hints). */
  async callNoStart<T>(method: string, params: Record<string, unknown>, timeoutMs: number): Promise<T> {
    return (await rawCall(this.socketPath, method, params, timeoutMs)) as T;
  }

  private async check(timeoutMs: number): Promise<void> {
    if (this.checked) return;
    const hello = (await rawCall(this.socketPath, "hello", {}, timeoutMs)) as { protocol?: number };
    if (hello.protocol !== PROTOCOL) {
      throw new DaemonError(
        `the ocb daemon speaks protocol ${String(hello.protocol)}, this plugin ${PROTOCOL}`,
        "EPROTO",
        "upgrade ocb or the plugin so both match, then restart the daemon (ocb serve stop)",
      );
    }
    this.checked = true;
  }

  /** Start `ocb serve --detach` unless a start is under way; reports through the logger. */
  start(): Promise<void> {
    if (this.starting) return this.starting;
    if (this.failedAt && Date.now() - this.failedAt < RETRY_START_MS) {
      return Promise.reject(new DaemonError(this.startFailure, "ESTART"));
    }
    this.starting = this.spawn().finally(() => {
      this.starting = null;
    });
    return this.starting;
  }

  /**
   * A start a request may wait for: at most `ms`, after which the request fails open and
   * the start goes on (the next request joins it).
   */
  private startWithin(ms: number): Promise<void> {
    const started = this.start();
    started.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new DaemonError(`the ocb daemon is still starting (${ms} ms)`, "ESTARTING")),
        ms,
      );
    });
    return Promise.race([started, late]).finally(() => clearTimeout(timer));
  }

  /** Whether a daemon answers now (no start). */
  async alive(): Promise<boolean> {
    try {
      await rawCall(this.socketPath, "hello", {}, 2000);
      return true;
    } catch {
      return false;
    }
  }

  private spawn(): Promise<void> {
    const { brain, workspace, ocb, logger } = this.opts;
    const argv = ["serve", "--detach", "--brain", brain];
    if (existsSync(workspace)) argv.push("--workspace", workspace);
    return new Promise((resolve, reject) => {
      execFile(ocb, argv, { timeout: 120_000, env: process.env }, (err, stdout, stderr) => {
        if (err) {
          this.failedAt = Date.now();
          const why = (stderr || err.message).trim().split("\n").slice(-3).join(" ");
          const message = `ocb-memory: cannot start the ocb daemon (${ocb} ${argv.join(" ")}): ${why}`;
          if (message !== this.startFailure) logger.error(message);
          this.startFailure = message;
          reject(new DaemonError(message, "ESTART", "install ocb or set plugins.entries.ocb-memory.config.ocb"));
          return;
        }
        this.startFailure = "";
        this.failedAt = 0;
        logger.info(`ocb-memory: ${stdout.trim()}`);
        resolve();
      });
    });
  }
}
