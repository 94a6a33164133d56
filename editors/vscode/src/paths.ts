// Workspace containment for the IDE's own methods: a path the page names is taken relative to
// the workspace folder it lies in (or the first folder), resolved through symlinks, and
// accepted only inside one of the folders.

import * as fs from 'node:fs';
import * as path from 'node:path';

/** The real path of `p` inside one of `folders`, or `null`. A path that does not exist yet
 * is judged by its nearest existing parent. */
export function containedPath(p: string, folders: string[]): string | null {
  if (typeof p !== 'string' || p === '' || p.includes('\0') || folders.length === 0) return null;
  const roots = folders.map((f) => realOrSelf(f));
  const candidates = path.isAbsolute(p) ? [p] : folders.map((f) => path.join(f, p));
  for (const candidate of candidates) {
    const real = realExisting(path.resolve(candidate));
    if (roots.some((root) => real === root || real.startsWith(root.endsWith(path.sep) ? root : root + path.sep))) return real;
  }
  return null;
}

/** Whether `a` and `b` name one folder (symlinks resolved). */
export function sameFolder(a: string, b: string): boolean {
  return realOrSelf(a) === realOrSelf(b);
}

function realOrSelf(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/** The real path of the nearest existing ancestor, with the missing tail appended. */
function realExisting(p: string): string {
  const tail: string[] = [];
  let at = p;
  for (;;) {
    try {
      return path.join(fs.realpathSync(at), ...tail.reverse());
    } catch {
      const parent = path.dirname(at);
      if (parent === at) return p;
      tail.push(path.basename(at));
      at = parent;
    }
  }
}
