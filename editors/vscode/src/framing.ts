// JSON Lines framing of the sidecar's socket: one v1 envelope per line in each direction.
// Chunks may split a line anywhere (also inside a multi-byte character): bytes are kept
// until their line ends, then decoded whole.

/** Splits a byte stream into lines (without the `\n`; a trailing `\r` dropped). */
export class LineSplitter {
  private parts: Buffer[] = [];
  private held = 0;

  /** `maxLine` bounds what is held for one unfinished line (the bridge's own limit is 1 MiB
   * per envelope; an outbound line is never longer). */
  constructor(private readonly maxLine = 64 * 1024 * 1024) {}

  /** The complete lines in `chunk` (plus what was held before it). Throws when a line
   * exceeds the bound, naming it. */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
      this.parts.push(chunk.subarray(start, nl));
      let line = Buffer.concat(this.parts).toString('utf8');
      if (line.endsWith('\r')) line = line.slice(0, -1);
      lines.push(line);
      this.parts = [];
      this.held = 0;
      start = nl + 1;
    }
    if (start < chunk.length) {
      this.held += chunk.length - start;
      if (this.held > this.maxLine) {
        this.parts = [];
        this.held = 0;
        throw new Error(`a line from the bridge exceeded ${this.maxLine} bytes`);
      }
      this.parts.push(chunk.subarray(start));
    }
    return lines;
  }
}

/** One envelope as a line (with its `\n`). */
export function encodeLine(message: unknown): string {
  return `${JSON.stringify(message)}\n`;
}
