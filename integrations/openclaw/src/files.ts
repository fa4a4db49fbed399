// memory_get: lines of a workspace file, never a file outside the workspace.
import { realpathSync, readFileSync, statSync } from "node:fs";
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
  const p = relPath.split("#")[0]?.trim() ?? "";
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

/** Lines `from`.. (1-based) of a workspace file, at most `lines` of them and MAX_CHARS. */
export function readExcerpt(workspace: string, relPath: string, from = 1, lines = DEFAULT_LINES): Excerpt {
  const real = resolveInWorkspace(workspace, relPath);
  const all = readFileSync(real, "utf8").split("\n");
  if (all.length > 1 && all[all.length - 1] === "") all.pop();
  const start = Math.max(1, Math.floor(from));
  let picked = all.slice(start - 1, start - 1 + Math.max(1, Math.floor(lines)));
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
  const truncated = end < all.length;
  const path = relative(realpathSync(workspace), real).split(sep).join("/");
  return {
    path,
    from: start,
    lines: picked.length,
    totalLines: all.length,
    text,
    truncated,
    ...(truncated ? { nextFrom: end + 1 } : {}),
  };
}
