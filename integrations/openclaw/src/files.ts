// memory_get: lines of a workspace file, never a file outside the workspace. The plugin
// refuses a path here first, then reads through the daemon's `read`, which checks again,
// refuses files the brain never indexes (.env, .git, the brain itself) and redacts
// secrets as the brain does.
import { realpathSync, statSync } from "node:fs";
import { isAbsolute, relative, resolve, sep } from "node:path";

export const DEFAULT_LINES = 120;
const MAX_CHARS = 20_000;

export type Excerpt = {
  path: string;
  from: number;
  lines: number;
  totalLines: number;
  text: string;
  truncated: boolean;
  nextFrom?: number;
};

/** Thrown for a path the tool refuses; its message goes to the model. */
export class PathRefused extends Error {}

function inside(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/**
 * The real path of `relPath` under `workspace`.
 *
 * Refuses absolute paths, `..` segments, and anything whose real path (symlinks
 * followed) is outside the workspace's real path.
 */
export function resolveInWorkspace(workspace: string, relPath: string): string {
  const p = cleanPath(relPath);
  if (!p) throw new PathRefused("path is empty");
  if (isAbsolute(p) || /^[A-Za-z]:[\\/]/.test(p)) throw new PathRefused(`absolute path refused: ${p}`);
  if (p.split(/[\\/]/).includes("..")) throw new PathRefused(`path outside the workspace refused: ${p}`);
  const root = realpathSync(workspace);
  let real: string;
  try {
    real = realpathSync(resolve(root, p));
  } catch {
    throw new PathRefused(`no such file in the workspace: ${p}`);
  }
  if (!inside(root, real)) throw new PathRefused(`path outside the workspace refused: ${p}`);
  if (!statSync(real).isFile()) throw new PathRefused(`not a file: ${p}`);
  return real;
}

/** The request path: what precedes a `#L..` citation tail, trimmed. */
export function cleanPath(relPath: string): string {
  return relPath.split("#")[0]?.trim() ?? "";
}

/** An excerpt of `picked` (lines from `start` of a file of `totalLines`), cut to MAX_CHARS at a line. */
export function excerptOf(path: string, picked: string[], start: number, totalLines: number): Excerpt {
  let text = picked.join("\n");
  if (text.length > MAX_CHARS) {
    let n = 0;
    const kept: string[] = [];
    for (const line of picked) {
      if (n + line.length + 1 > MAX_CHARS) break;
      kept.push(line);
      n += line.length + 1;
    }
    picked = kept;
    text = picked.join("\n");
  }
  const end = start - 1 + picked.length;
  const truncated = end < totalLines;
  return {
    path,
    from: start,
    lines: picked.length,
    totalLines,
    text,
    truncated,
    ...(truncated ? { nextFrom: end + 1 } : {}),
  };
}

/** What the daemon's `read` answers. */
export type ReadAnswer = { path: string; from: number; to: number; total_lines: number; text: string };

/** The excerpt of a daemon `read` answer. */
export function excerptOfRead(got: ReadAnswer): Excerpt {
  const picked = got.to >= got.from ? got.text.split("\n") : [];
  return excerptOf(got.path, picked, got.from, got.total_lines);
}
