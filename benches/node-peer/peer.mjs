// The Node peer of `bb-harness ingest`: what a TypeScript extension host would do with the
// same capture. Reads FILE in 16 KiB chunks through `eventsource-parser`, `JSON.parse`s each
// event, routes it by session (`properties.sessionID`, else `syncEvent.aggregateID`),
// drops `sync` echoes as the bridge does, coalesces adjacent `message.part.delta`s of one
// message + part + field (the last event's id and payload with the concatenated text), and
// after every chunk `JSON.stringify`s one `bb/events` envelope per session with pending
// events into a byte counter. Prints the same JSON line as `bb-harness ingest`.
// Usage: node peer.mjs FILE [REPEAT]
import { createParser } from "eventsource-parser";
import { openSync, readSync, closeSync } from "node:fs";

const [file, repeatArg] = process.argv.slice(2);
const repeat = Math.max(1, Number(repeatArg ?? 1));
const CHUNK = 16 * 1024;

let events = 0, published = 0, bytesOut = 0;
const pending = new Map(); // session -> array of items, in order

function onEvent(ev) {
  events++;
  let raw;
  try { raw = JSON.parse(ev.data); } catch { return; }
  if (raw && raw.type === undefined && raw.payload && raw.payload.type !== undefined) raw = raw.payload;
  if (!raw || typeof raw.type !== "string") return;
  if (raw.type === "sync") return; // its seq is checked by the bridge, not forwarded
  const p = raw.properties;
  const session = p && typeof p.sessionID === "string" && p.sessionID !== "" ? p.sessionID : undefined;
  if (session === undefined) return;
  let list = pending.get(session);
  if (list === undefined) { list = []; pending.set(session, list); }
  const item = { id: raw.id ?? "", type: raw.type, payload: p };
  const last = list[list.length - 1];
  if (last !== undefined && raw.type === "message.part.delta" && last.type === raw.type
      && last.payload.messageID === p.messageID && last.payload.partID === p.partID
      && last.payload.field === p.field && typeof p.delta === "string") {
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
    pending.set(sessionId, []);
  }
}

const cpuBefore = process.cpuUsage();
const started = process.hrtime.bigint();
const parser = createParser({ onEvent });
const buf = Buffer.allocUnsafe(CHUNK);
const decoder = new TextDecoder();
for (let r = 0; r < repeat; r++) {
  const fd = openSync(file, "r");
  for (;;) {
    const n = readSync(fd, buf, 0, CHUNK, null);
    if (n === 0) break;
    parser.feed(decoder.decode(buf.subarray(0, n), { stream: true }));
    flush();
  }
  closeSync(fd);
}
parser.feed("\n\n");
flush();
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
const cpu = process.cpuUsage(cpuBefore);
console.log(JSON.stringify({
  events, published, bytesOut, seconds,
  cpuSeconds: (cpu.user + cpu.system) / 1e6,
  eventsPerSec: events / seconds,
  peakRssBytes: process.resourceUsage().maxRSS * 1024,
}));
