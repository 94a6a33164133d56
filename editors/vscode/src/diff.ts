// The two sides of a unified diff of one file, for VS Code's diff editor. With the file's
// current text (the change is usually applied by then), the left side is that text with the
// change taken back and the right side is the file itself; when the text does not match the
// diff (the file moved on, or is absent), both sides are rebuilt from the hunks alone.

interface Hunk {
  oldStart: number;
  lines: string[];
}

export interface Sides {
  before: string;
  after: string;
  /** `true` when `after` is the file's current text. */
  whole: boolean;
}

export function parseHunks(patch: string): Hunk[] {
  const hunks: Hunk[] = [];
  let current: Hunk | null = null;
  for (const line of patch.split('\n')) {
    const head = /^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@/.exec(line);
    if (head) {
      current = { oldStart: Number(head[1]), lines: [] };
      hunks.push(current);
      continue;
    }
    if (!current) continue;
    if (line.startsWith(' ') || line.startsWith('+') || line.startsWith('-')) current.lines.push(line);
    else if (line === '') current.lines.push(' ');
  }
  for (const h of hunks) {
    while (h.lines.length > 0 && h.lines[h.lines.length - 1] === ' ') h.lines.pop();
  }
  return hunks;
}

/** The sides of `patch`; `current` is the file's text now (`null`: absent). */
export function diffSides(patch: string, current: string | null): Sides {
  const hunks = parseHunks(patch);
  if (current !== null) {
    const before = takeBack(current, hunks);
    if (before !== null) return { before, after: current, whole: true };
  }
  const before: string[] = [];
  const after: string[] = [];
  for (const h of hunks) {
    for (const line of h.lines) {
      const text = line.slice(1);
      if (line[0] !== '+') before.push(text);
      if (line[0] !== '-') after.push(text);
    }
  }
  return { before: joinLines(before), after: joinLines(after), whole: false };
}

/** `after` with the hunks reversed, or `null` when it does not hold their new lines. */
function takeBack(after: string, hunks: Hunk[]): string | null {
  const lines = after === '' ? [] : after.replace(/\n$/, '').split('\n');
  const out: string[] = [];
  let at = 0;
  for (const h of hunks) {
    const newLines = h.lines.filter((l) => l[0] !== '-').map((l) => l.slice(1));
    const oldLines = h.lines.filter((l) => l[0] !== '+').map((l) => l.slice(1));
    const found = findBlock(lines, newLines, at);
    if (found === -1) return null;
    out.push(...lines.slice(at, found), ...oldLines);
    at = found + newLines.length;
  }
  out.push(...lines.slice(at));
  return joinLines(out);
}

function findBlock(lines: string[], block: string[], from: number): number {
  for (let i = from; i + block.length <= lines.length; i++) {
    if (block.every((l, j) => lines[i + j] === l)) return i;
  }
  return block.length === 0 ? from : -1;
}

function joinLines(lines: string[]): string {
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}
