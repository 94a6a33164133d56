// The Node peer of `bb-harness ingest`: what a TypeScript extension host written for speed
// would do with the same capture. Reads FILE whole (one `readFileSync`, one UTF-8 decode),
// parses it as an event stream (WHATWG rules: LF, CR and CRLF line ends, `data:` lines joined,
// comments and other fields skipped), `JSON.parse`s each event, unwraps the `/global/event`
// wrapper, drops `sync` echoes as the bridge does, routes by session
// (`properties.sessionID`, else its `info`'s, else its `part`'s, as the bridge does), coalesces adjacent `message.part.delta`s of one message + part +
// field (the last event's id and payload with the concatenated text), and after every
// 16 KiB of input (the bridge's read size) `JSON.stringify`s one `bb/events` envelope per
// session with pending events. Prints the same JSON line as `bb-harness ingest`.
//
// Usage: node peer.mjs [--parser hand|eventsource] [--out FILE] FILE [REPEAT]
//   --parser eventsource: the same work with `eventsource-parser` fed 16 KiB pieces of the
//     decoded text (the hand-rolled parser below is the faster, and the default).
//   --out FILE: also write the envelopes, one per line (for `benches/check-peer.py`).
import { readFileSync, writeFileSync } from "node:fs";

const args = process.argv.slice(2);
let parserKind = "hand", outFile;
while (args[0]?.startsWith("--")) {
  const flag = args.shift();
  if (flag === "--parser") parserKind = args.shift();
  else if (flag === "--out") outFile = args.shift();
  else throw new Error(`unknown flag ${flag}`);
}
const [file, repeatArg] = args;
const repeat = Math.max(1, Number(repeatArg ?? 1));
const FLUSH_EVERY = 16 * 1024;

let events = 0, published = 0, bytesOut = 0;
const out = outFile === undefined ? undefined : [];
const pending = new Map(); // session -> array of items, in order
const shown = new Set(); // ids of the open permission requests forwarded

function sessionOf(o) {
  return o && typeof o.sessionID === "string" && o.sessionID !== "" ? o.sessionID : undefined;
}

function onData(data) {
  events++;
  let raw;
  try { raw = JSON.parse(data); } catch { return; }
  if (raw !== null && raw.type === undefined && raw.payload && raw.payload.type !== undefined) raw = raw.payload;
  if (raw === null || typeof raw.type !== "string") return;
  if (raw.type === "sync") return; // its seq is checked by the bridge, not forwarded
  const p = raw.properties;
  const session = sessionOf(p) ?? sessionOf(p?.info) ?? sessionOf(p?.part);
  if (session === undefined) return;
  // A permission request is shown once (the bridge's rule): a repeat of its id is dropped
  // while it is open; an id asked again after its reply is a new request.
  if (raw.type === "permission.asked") {
    if (shown.has(p.id)) return;
    shown.add(p.id);
  } else if (raw.type === "permission.replied" || raw.type === "question.replied"
      || raw.type === "question.rejected") {
    shown.delete(p.requestID);
  }
  let list = pending.get(session);
  if (list === undefined) { list = []; pending.set(session, list); }
  const item = { id: raw.id ?? "", type: raw.type, payload: p };
  const last = list.length === 0 ? undefined : list[list.length - 1];
  if (last !== undefined && raw.type === "message.part.delta" && last.type === raw.type
      && last.payload.messageID === p.messageID && last.payload.partID === p.partID
      && last.payload.field === p.field && typeof p.delta === "string"
      && typeof last.payload.delta === "string") {
    item.payload = { ...p, delta: last.payload.delta + p.delta };
    list[list.length - 1] = item;
  } else {
    list.push(item);
  }
}

function flush() {
  for (const [sessionId, list] of pending) {
    if (list.length === 0) continue;
    const line = JSON.stringify({ v: 1, kind: "evt", topic: "bb/events", payload: { sessionId, events: list } });
    published++;
    bytesOut += Buffer.byteLength(line) + 1;
    if (out !== undefined) out.push(line);
    pending.set(sessionId, []);
  }
}

// The event stream, hand-rolled over the file's bytes: `indexOf` finds each LF natively,
// only `data` lines are decoded (UTF-8, one `utf8Slice` each), an event is dispatched at a
// blank line when it has data. A CR anywhere sends the file to `eventsource-parser` instead
// (CR and CRLF line ends are rare; the general loop is not worth its code here). Faster than
// decoding the whole file and scanning the string (0.29-0.31 against 0.35-0.37 CPU s on the
// 100k capture) and than `eventsource-parser` (0.38-0.40).
function parseHand(buf) {
  let nextFlush = FLUSH_EVERY;
  let data = "", hasData = false;
  const n = buf.length;
  let pos = buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  while (pos < n) {
    const end = buf.indexOf(10, pos);
    if (end === -1) break; // an unterminated last line is not a line
    const next = end + 1;
    if (end === pos) {
      if (hasData) { onData(data); data = ""; hasData = false; }
      if (next >= nextFlush) { flush(); nextFlush = next + FLUSH_EVERY; }
    } else if (buf[pos] === 100 && buf[pos + 1] === 97 && buf[pos + 2] === 116 && buf[pos + 3] === 97
               && (end === pos + 4 || buf[pos + 4] === 58)) { // "data" then ":" or the line end
      let v = pos + 5;
      if (v < end && buf[v] === 32) v++;
      const value = end === pos + 4 ? "" : buf.utf8Slice(v, end);
      data = hasData ? data + "\n" + value : value;
      hasData = true;
    }
    pos = next;
  }
  flush();
}

async function parseEventsource(text) {
  const { createParser } = await import("eventsource-parser");
  const parser = createParser({ onEvent: (ev) => onData(ev.data) });
  for (let i = 0; i < text.length; i += FLUSH_EVERY) {
    parser.feed(text.slice(i, i + FLUSH_EVERY));
    flush();
  }
  parser.feed("\n\n");
  flush();
}

const cpuBefore = process.cpuUsage();
const started = process.hrtime.bigint();
for (let r = 0; r < repeat; r++) {
  const bytes = readFileSync(file);
  if (parserKind === "eventsource" || bytes.indexOf(13) !== -1) {
    await parseEventsource(bytes.toString("utf8"));
  } else {
    parseHand(bytes);
  }
}
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
const cpu = process.cpuUsage(cpuBefore);
if (out !== undefined) writeFileSync(outFile, out.join("\n") + "\n");
console.log(JSON.stringify({
  events, published, bytesOut, seconds,
  cpuSeconds: (cpu.user + cpu.system) / 1e6,
  eventsPerSec: events / seconds,
  peakRssBytes: process.resourceUsage().maxRSS * 1024,
}));
