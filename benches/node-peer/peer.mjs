// The Node peer of `bb-harness ingest`: what a TypeScript extension host written for speed
// would do to send a webview what the bridge sends it from the same capture. Reads FILE whole
// (one `readFileSync`), parses it as an event stream (WHATWG rules: LF, CR and CRLF line ends,
// `data:` lines joined, comments and other fields skipped), `JSON.parse`s each event, and then
// does the bridge's work on it, rule for rule (`crates/kilo/src/events.rs`, `facts.rs`,
// `stamp.rs`; `crates/normalize/src/class.rs`, `batch.rs`; `crates/host/src/core.rs`,
// `lane.rs`, `prompting.rs`):
//
// - unwraps the `/global/event` wrapper; reads a `sync` echo's `seq` per session (a jump is a
//   gap: a `bb/connection` with `gapDetected`) and forwards no echo;
// - routes by session (`properties.sessionID`, else its `info`'s, else its `part`'s);
// - classifies each event (Kilo's class table: type, message role, part type, tool status)
//   and stamps its `ts` (the event's latest moment, as the bridge reads it);
// - derives each session's `bb/state` entry: title and `updatedAt` from its `info`, parent,
//   `running` from `session.status` / `session.idle`, queued prompts, open permission requests
//   and questions (a repeat of an open one is dropped; a reply closes it; the event that showed
//   a closed one, sent again, is a replay and dropped), removal on
//   `session.deleted`; an unknown event during an open permission or tool call fails the turn
//   closed (the bridge's `bb.turn.failed` event);
// - batches per session with the bridge's cadence (the selected session 33 ms, the others
//   500 ms, at once for permission requests, errors and run ends, and for the first event
//   after a quiet spell), coalescing adjacent `message.part.delta`s of one message + part +
//   field, merging adjacent events of one session as the bridge's pump does (≤ 256);
// - on simulated time: +1 ms per 16 KiB of input (the bridge's read size); after each 16 KiB
//   the due batches are published and, when the state projection changed, the sessions whose
//   entry changed are flushed first and one `bb/state` follows;
// - `JSON.stringify`s each message: `bb/events` with the tab (`implicit-1`) and its `seq`,
//   each item with its `class`; `bb/state` with every session.
//
// Not done, because this run's output does not need it: the reduced view model of each
// session (the bridge keeps it for a late window's resync and for naming an untitled session
// by its first prompt: every session in the capture has a title), the replay ring, the 1 MiB
// split by bytes (the largest message here is 10 KB; a batch is split at 1024 items as the
// bridge does) and the outbound validation. Prints the same JSON line as `bb-harness ingest`.
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
const CHUNK = 16 * 1024;
const ACTIVE_CADENCE = 33, BACKGROUND_CADENCE = 500;
const MAX_BATCH = 1024, MERGED_EVENTS = 256;
const TAB = "implicit-1";

let events = 0, published = 0, bytesOut = 0;
const out = outFile === undefined ? undefined : [];
let now = 0; // simulated milliseconds

function emit(line) {
  published++;
  bytesOut += Buffer.byteLength(line) + 1;
  if (out !== undefined) out.push(line);
}

// ---- the host: sessions, prompts, lanes, state ----------------------------------------

class Session {
  constructor() {
    this.summary = undefined; // {sessionId, title, updatedAt, parentId}
    this.parent = undefined;
    this.running = false;
    this.queued = 0;
    this.engineCountsQueue = false;
    this.prompts = new Map(); // open request id -> the id of the event that showed it
    // Closed request id -> the event that showed it: that event again is a replay (a resumed
    // stream) and shows nothing; another event of the id is a new request. The bridge keeps
    // the last 1,024 closed requests; the captures close far fewer.
    this.closed = new Map();
  }
}
class Lane {
  constructor() {
    this.items = [];
    this.firstPending = -1;
    this.lastFlush = -1;
    this.immediate = false;
  }
}
const sessions = new Map();
let order = []; // newest first, as the bridge lists them
const lanes = new Map();
let batchOrder = []; // sessions with pending events, in the order their batches began
let changed = new Set();
let stateDirty = false, lastState;
let active;
let tabSeq = 0;
let connection; // the last bb/connection payload, as JSON

function entry(id) {
  let s = sessions.get(id);
  if (s === undefined) {
    s = new Session();
    sessions.set(id, s);
    order.unshift(id);
  }
  return s;
}

function touch(id) {
  changed.add(id);
  stateDirty = true;
}

function dueAt(lane, id) {
  if (lane.firstPending < 0) return Infinity;
  if (lane.immediate || lane.lastFlush < 0) return lane.firstPending;
  const cadence = id === active ? ACTIVE_CADENCE : BACKGROUND_CADENCE;
  return Math.max(lane.firstPending, lane.lastFlush + cadence);
}

function flushesImmediately(cls) {
  return cls === "permission.request" || cls === "run.error_or_gap" || cls === "run.finished";
}

// Queues items in a session's lane, coalescing adjacent deltas of one message + part +
// field; publishes at once when full or due.
function pushEvents(id, items) {
  let lane = lanes.get(id);
  if (lane === undefined) { lane = new Lane(); lanes.set(id, lane); }
  if (lane.items.length === 0) batchOrder.push(id);
  const list = lane.items;
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (flushesImmediately(item.class)) lane.immediate = true;
    if (lane.firstPending < 0) lane.firstPending = now;
    const last = list.length === 0 ? undefined : list[list.length - 1];
    if (last !== undefined && item.type === "message.part.delta" && last.type === item.type) {
      const a = last.payload, b = item.payload;
      if (typeof a.messageID === "string" && typeof a.partID === "string" && typeof a.field === "string"
          && a.messageID === b.messageID && a.partID === b.partID && a.field === b.field) {
        const text = (typeof a.delta === "string" ? a.delta : "") + (typeof b.delta === "string" ? b.delta : "");
        item.payload = { ...b, delta: text };
        list[list.length - 1] = item;
        continue;
      }
    }
    list.push(item);
  }
  if (list.length >= MAX_BATCH || dueAt(lane, id) <= now) flushLane(id, lane);
}

function flushLane(id, lane) {
  if (lane.firstPending < 0) return;
  const items = lane.items;
  lane.items = [];
  lane.immediate = false;
  lane.firstPending = -1;
  lane.lastFlush = now;
  const at = batchOrder.indexOf(id);
  if (at !== -1) batchOrder.splice(at, 1);
  for (let i = 0; i < items.length; i += MAX_BATCH) {
    const part = i === 0 && items.length <= MAX_BATCH ? items : items.slice(i, i + MAX_BATCH);
    emit(JSON.stringify({ v: 1, kind: "evt", topic: "bb/events",
      payload: { sessionId: id, events: part, tabId: TAB, seq: ++tabSeq } }));
  }
}

function flushSession(id) {
  const lane = lanes.get(id);
  if (lane !== undefined) flushLane(id, lane);
}

function flushAll() {
  while (batchOrder.length > 0) flushSession(batchOrder[0]);
  changed = new Set();
}

function engineEvents(id, items) {
  if (!sessions.has(id)) { entry(id); touch(id); }
  pushEvents(id, items);
}

function openCount() {
  let n = 0;
  for (const s of sessions.values()) n += s.prompts.size;
  return n;
}

function stateJson() {
  const list = [];
  for (const id of order) {
    const s = sessions.get(id);
    const sum = s.summary;
    const e = { sessionId: id };
    if (sum !== undefined) {
      e.sessionId = sum.sessionId;
      // A blank title is the view's first prompt in the bridge (not kept here: see above).
      if (sum.title !== undefined && sum.title.trim() !== "") e.title = sum.title;
    }
    e.status = s.running ? "running" : "idle";
    if (sum !== undefined && sum.updatedAt !== undefined) e.updatedAt = sum.updatedAt;
    if (s.queued > 0) e.queuedPrompts = s.queued;
    if (s.parent !== undefined) e.parentId = s.parent;
    if (s.prompts.size > 0) e.pendingPermissionCount = s.prompts.size;
    list.push(e);
  }
  const state = { sessions: list };
  if (active !== undefined) state.activeSessionId = active;
  state.running = active !== undefined && sessions.get(active)?.running === true;
  state.pendingPermissionCount = openCount();
  return JSON.stringify(state);
}

// The due batches, then the state when it changed (the sessions whose entry changed first).
function tick() {
  if (batchOrder.length > 0) {
    for (const id of batchOrder.slice()) {
      const lane = lanes.get(id);
      if (lane !== undefined && dueAt(lane, id) <= now) flushLane(id, lane);
    }
  }
  if (!stateDirty) return;
  stateDirty = false;
  const state = stateJson();
  if (state === lastState) return;
  if (changed.size > 0) {
    for (const id of batchOrder.filter((s) => changed.has(s))) flushSession(id);
    changed.clear();
  }
  lastState = state;
  emit(`{"v":1,"kind":"evt","topic":"bb/state","payload":${state}}`);
}

function select(id) {
  entry(id);
  touch(id);
  active = id;
}

function gap(session) {
  const payload = connection === undefined ? { status: "connected" } : JSON.parse(connection);
  payload.sessionId = session;
  payload.gapDetected = true;
  const json = JSON.stringify(payload);
  if (json === connection) return;
  flushAll();
  connection = json;
  emit(`{"v":1,"kind":"evt","topic":"bb/connection","payload":${json}}`);
}

// An open request closes; the event that showed it is remembered.
function close(s, r) {
  const shownBy = s.prompts.get(r);
  if (shownBy === undefined) return;
  s.prompts.delete(r);
  s.closed.set(r, shownBy);
}

// One mapped input, as the host handles it.
function handle(input) {
  switch (input.k) {
    case 0: engineEvents(input.s, input.items); break; // events
    case 1: { // a prompt raised, with its event
      const s = entry(input.s);
      const shownBy = input.items[0].id;
      if (s.closed.get(input.r) === shownBy) break;
      if (!s.prompts.has(input.r)) {
        s.prompts.set(input.r, shownBy);
        s.closed.delete(input.r);
        engineEvents(input.s, input.items);
      }
      touch(input.s);
      break;
    }
    case 2: { // a prompt settled, with its event
      const s = sessions.get(input.s);
      if (s !== undefined) close(s, input.r);
      engineEvents(input.s, input.items);
      touch(input.s);
      break;
    }
    case 3: { // running
      const s = entry(input.s);
      if (s.running !== input.v) {
        s.running = input.v;
        if (input.v && !s.engineCountsQueue && s.queued > 0) s.queued--;
        touch(input.s);
      }
      break;
    }
    case 4: { // queued prompts
      const s = entry(input.s);
      s.engineCountsQueue = true;
      if (s.queued !== input.v) { s.queued = input.v; touch(input.s); }
      break;
    }
    case 5: { // session upserted
      const sum = input.v;
      const s = entry(sum.sessionId);
      if (sum.parentId !== undefined) s.parent = sum.parentId;
      s.summary = sum;
      touch(sum.sessionId);
      break;
    }
    case 6: { // session removed
      const id = input.s;
      flushSession(id);
      lanes.delete(id);
      changed.delete(id);
      if (sessions.delete(id)) order = order.filter((s) => s !== id);
      if (active === id) active = undefined;
      stateDirty = true;
      break;
    }
    case 7: { // prompts withdrawn (a turn failed closed)
      const s = sessions.get(input.s);
      if (s !== undefined) for (const r of [...s.prompts.keys()]) close(s, r);
      touch(input.s);
      break;
    }
    case 8: gap(input.s); break; // a `sync` sequence jump
  }
}

// ---- the pump: adjacent events of one session go to the host as one input ---------------

let held;
function pumpInput(input) {
  if (held !== undefined && held.k === 0 && input.k === 0 && held.s === input.s
      && held.items.length + input.items.length <= MERGED_EVENTS) {
    for (const item of input.items) held.items.push(item);
    return;
  }
  if (held !== undefined) handle(held);
  held = input;
}
function pumpFlush() {
  if (held !== undefined) { const h = held; held = undefined; handle(h); }
}

// ---- the mapping: one engine event into inputs -----------------------------------------

const flows = new Map(); // session -> {running, tools: Set, asked: Set}
const syncSeq = new Map();
let selected = false, failures = 0;

function flow(id) {
  let f = flows.get(id);
  if (f === undefined) { f = { tools: new Set(), asked: new Set(), diffs: new Map() }; flows.set(id, f); }
  return f;
}

const str = (v) => (typeof v === "string" ? v : undefined);
const named = (v) => (typeof v === "string" && v !== "" ? v : undefined);
const obj = (v) => (v !== null && typeof v === "object" && !Array.isArray(v) ? v : undefined);
const ms = (v) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined);

function classify(type, p) {
  switch (type) {
    case "message.updated": return obj(p.info)?.role === "user" ? "transcript.user_message" : "transcript.assistant_stream";
    case "message.part.updated": {
      const part = obj(p.part);
      switch (named(part?.type)) {
        case "text": return "transcript.assistant_stream";
        case "reasoning": return "transcript.reasoning_stream";
        case "tool": {
          const status = named(obj(part.state)?.status);
          return status === "completed" || status === "error" ? "tool.result" : "tool.call";
        }
        case "step-start": case "step-finish": case "patch": case "snapshot": case "agent": case "compaction":
          return "session.info";
        default: return "unknown_event";
      }
    }
    case "message.part.delta": case "message.removed": case "message.part.removed": return "transcript.assistant_stream";
    case "permission.asked": case "question.asked": return "permission.request";
    case "permission.replied": case "question.replied": case "question.rejected": return "permission.response";
    case "todo.updated": return "task.todo";
    case "session.status": return "run.status";
    case "session.idle": case "session.turn.close": return "run.finished";
    case "session.turn.open": return "turn.start";
    case "session.error": return "run.error_or_gap";
    case "session.diff": case "file.edited": return "run.diff";
    case "session.created": case "session.updated": case "session.deleted": case "session.compacted":
    case "session.queue.changed": case "session.drain.interrupted": return "session.info";
    case "server.connected": case "server.heartbeat": case "server.instance.disposed": case "sync":
    case "plugin.added": case "project.updated": case "catalog.updated": case "integration.updated":
    case "reference.updated": case "file.watcher.updated": case "installation.updated": case "lsp.updated":
      return "connection";
    default: return "unknown_event";
  }
}

// The event's latest moment: `time`, else the part's end / start, else the info's
// completed / updated / created.
function eventTs(p, part, info) {
  let t = ms(p.time);
  if (t !== undefined) return t;
  const pt = obj(part?.time);
  if (pt !== undefined) {
    t = ms(pt.end) ?? ms(pt.start);
    if (t !== undefined) return t;
  }
  const it = obj(info?.time);
  if (it !== undefined) return ms(it.completed) ?? ms(it.updated) ?? ms(it.created);
  return undefined;
}

function sessionSelected(id) {
  if (!selected) {
    selected = true;
    pumpFlush();
    select(id);
  }
}

function onData(data) {
  events++;
  let raw;
  try { raw = JSON.parse(data); } catch { return; }
  if (raw !== null && typeof raw === "object" && raw.type === undefined && obj(raw.payload)?.type !== undefined) raw = raw.payload;
  if (raw === null || typeof raw !== "object" || typeof raw.type !== "string") return;
  const type = raw.type;
  if (type === "sync") {
    const se = obj(raw.syncEvent);
    const session = named(se?.aggregateID);
    if (session === undefined) return;
    const seq = se.seq;
    if (typeof seq !== "number" || !Number.isInteger(seq) || seq < 0) return;
    const prev = syncSeq.get(session);
    syncSeq.set(session, seq);
    if (prev !== undefined && seq > prev + 1) pumpInput({ k: 8, s: session });
    return;
  }
  const p = obj(raw.properties) ?? {};
  const info = obj(p.info), part = obj(p.part);
  const session = named(p.sessionID) ?? named(info?.sessionID) ?? named(part?.sessionID);
  if (session === undefined) return;
  sessionSelected(session);
  const cls = classify(type, p);
  let failClosed = false;
  if (cls === "unknown_event") {
    const f = flows.get(session);
    failClosed = f !== undefined && (f.tools.size > 0 || f.asked.size > 0);
  }
  const id = str(raw.id) ?? "", ts = eventTs(p, part, info);
  const items = [ts === undefined ? { id, type, payload: p, class: cls } : { id, type, ts, payload: p, class: cls }];
  if ((type === "permission.asked" || type === "question.asked") && typeof p.id === "string") {
    pumpInput({ k: 1, s: session, r: p.id, items });
  } else if ((type === "permission.replied" || type === "question.replied" || type === "question.rejected")
             && typeof p.requestID === "string") {
    pumpInput({ k: 2, s: session, r: p.requestID, items });
  } else {
    pumpInput({ k: 0, s: session, items });
  }
  // What the event implies for the session's state.
  switch (type) {
    case "session.status": {
      const status = str(obj(p.status)?.type);
      if (status !== undefined) running(session, status !== "idle");
      break;
    }
    case "session.idle": running(session, false); break;
    case "session.queue.changed":
      pumpInput({ k: 4, s: session, v: Array.isArray(p.queued) ? p.queued.length : 0 });
      break;
    case "message.part.updated": {
      if (part?.type !== "tool" || typeof part.callID !== "string") break;
      const state = obj(part.state);
      const f = flow(session);
      const file = str(obj(state?.input)?.filePath), diff = str(obj(state?.metadata)?.diff);
      if (file !== undefined && diff !== undefined) f.diffs.set(file, diff);
      const status = state?.status;
      if (status === "pending" || status === "running") f.tools.add(part.callID);
      else f.tools.delete(part.callID);
      break;
    }
    case "session.created": case "session.updated": {
      if (info === undefined || typeof info.id !== "string") break;
      const sum = { sessionId: info.id, title: str(info.title), updatedAt: numberOf(obj(info.time)?.updated),
        parentId: named(info.parentID) };
      pumpInput({ k: 5, v: sum });
      break;
    }
    case "session.deleted":
      flows.delete(session);
      pumpInput({ k: 6, s: session });
      break;
    case "permission.asked": case "question.asked": {
      const f = flow(session);
      const meta = obj(p.metadata);
      const file = meta?.filepath ?? meta?.filePath;
      if (typeof file === "string" && typeof meta.diff === "string") f.diffs.set(file, meta.diff);
      if (typeof p.id === "string") f.asked.add(p.id);
      break;
    }
    case "permission.replied": case "question.replied": case "question.rejected":
      if (typeof p.requestID === "string") flows.get(session)?.asked.delete(p.requestID);
      break;
  }
  if (failClosed) failTurn(session, type);
}

function numberOf(v) {
  return typeof v === "number" ? v : undefined;
}

function running(session, value) {
  const f = flow(session);
  if (!value) f.tools.clear();
  pumpInput({ k: 3, s: session, v: value });
}

function failTurn(session, unknown) {
  failures++;
  const f = flow(session);
  f.tools.clear();
  f.asked.clear();
  const payload = { sessionID: session, reason: "unknown_event", eventType: unknown,
    message: `the engine sent an event the bridge does not know (${unknown}) during a permission or tool flow; the turn was stopped. Retry with bb.command retry.`,
    retry: { command: "retry" } };
  pumpInput({ k: 0, s: session, items: [{ id: `bb-turn-failed-${failures}`, type: "bb.turn.failed", payload, class: "unknown_event" }] });
  pumpInput({ k: 7, s: session });
}

// A 16 KiB read ended: the pump hands on what it holds, the host publishes what is due.
function chunkEnd() {
  pumpFlush();
  tick();
}

// ---- the event stream --------------------------------------------------------------------

// Hand-rolled over the file's bytes: `indexOf` finds each LF natively, only `data` lines are
// decoded (UTF-8, one `utf8Slice` each), an event is dispatched at a blank line when it has
// data. A CR anywhere sends the file to `eventsource-parser` instead (CR and CRLF line ends
// are rare; the general loop is not worth its code here). Faster than decoding the whole file
// and scanning the string, and than `eventsource-parser`. The chunk an event completes in is
// the one its blank line's LF falls in, as in the bridge's 16 KiB reads.
function parseHand(buf) {
  let data = "", hasData = false;
  const n = buf.length;
  const chunks = Math.ceil(n / CHUNK);
  let chunk = 0, chunkLimit = CHUNK; // the current chunk's end offset
  now++;
  let pos = buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  while (pos < n) {
    const end = buf.indexOf(10, pos);
    if (end === -1) break; // an unterminated last line is not a line
    while (end >= chunkLimit) { chunkEnd(); chunk++; chunkLimit += CHUNK; now++; }
    if (end === pos) {
      if (hasData) { onData(data); data = ""; hasData = false; }
    } else if (buf[pos] === 100 && buf[pos + 1] === 97 && buf[pos + 2] === 116 && buf[pos + 3] === 97
               && (end === pos + 4 || buf[pos + 4] === 58)) { // "data" then ":" or the line end
      let v = pos + 5;
      if (v < end && buf[v] === 32) v++;
      const value = end === pos + 4 ? "" : buf.utf8Slice(v, end);
      data = hasData ? data + "\n" + value : value;
      hasData = true;
    }
    pos = end + 1;
  }
  while (chunk < chunks - 1) { chunkEnd(); chunk++; now++; }
  chunkEnd();
}

async function parseEventsource(bytes) {
  const { createParser } = await import("eventsource-parser");
  const parser = createParser({ onEvent: (ev) => onData(ev.data) });
  const decoder = new TextDecoder();
  for (let i = 0; i < bytes.length; i += CHUNK) {
    now++;
    parser.feed(decoder.decode(bytes.subarray(i, i + CHUNK), { stream: true }));
    chunkEnd();
  }
}

const cpuBefore = process.cpuUsage();
const started = process.hrtime.bigint();
for (let r = 0; r < repeat; r++) {
  const bytes = readFileSync(file);
  if (parserKind === "eventsource" || bytes.indexOf(13) !== -1) {
    await parseEventsource(bytes);
  } else {
    parseHand(bytes);
  }
}
// The stream ended: whatever is pending goes out at the latest cadence.
now += 1000;
chunkEnd();
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
const cpu = process.cpuUsage(cpuBefore);
if (out !== undefined) writeFileSync(outFile, out.join("\n") + "\n");
console.log(JSON.stringify({
  events, published, bytesOut, seconds,
  cpuSeconds: (cpu.user + cpu.system) / 1e6,
  eventsPerSec: events / seconds,
  peakRssBytes: process.resourceUsage().maxRSS * 1024,
}));
