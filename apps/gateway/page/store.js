// The page's state, and how the bridge's view-model updates apply to it. The bridge's reducers
// do the work: this file only applies updates (upserts by key, text appended at the offset
// each delta names) and keeps what the person did (prompts on their way, answers given).
// It knows no engine: no event types, no engine field names. A resync is the same code: the
// session is emptied, then its updates rebuild it.

const UNKNOWN_KEPT = 256;

export function createStore() {
  return {
    link: { state: 'connecting', attempt: 0 },
    engine: null,
    engineLabel: null,
    connection: { status: 'connecting' },
    sessions: [],
    activeSessionId: null,
    running: false,
    pendingPermissionCount: 0,
    sessions_rev: 0,
    chats: new Map(),
    notices: [],
    rev: 0,
  };
}

function emptyChat() {
  return {
    blocks: new Map(), // key → block (the update's fields, plus `text` for messages)
    turns: [], // [{ id, user: key|null, pending: {text, failed}|null, keys: [] }]
    turnOf: new Map(), // block key → turn
    run: null,
    tasks: new Map(),
    todos: null,
    files: new Map(),
    unknown: new Map(),
    oversized: [],
    earlier: null, // {before, turns}: older turns the bridge left out (`bb.history`)
    missed: 0,
    rev: 0,
    panelsRev: 0,
  };
}

/** The chat of a session (created empty). */
export function chat(store, sessionId) {
  let c = store.chats.get(sessionId);
  if (!c) {
    c = emptyChat();
    store.chats.set(sessionId, c);
  }
  return c;
}

function turnById(c, id) {
  return c.turns.find((t) => t.id === id);
}

function newTurn(c, id) {
  const turn = { id, user: null, pending: null, keys: [] };
  c.turns.push(turn);
  return turn;
}

/** The turn a new block goes to: its prompt's, else (a user block) a new one, else the last. */
function place(c, key, u) {
  if (u.kind === 'userMessage') {
    const id = u.messageId ?? `turn:${key}`;
    const turn = turnById(c, id) ?? newTurn(c, id);
    turn.user = key;
    turn.pending = null;
    return turn;
  }
  let turn = u.messageId ? turnById(c, u.messageId) : null;
  if (!turn && u.messageId) turn = newTurn(c, u.messageId);
  if (!turn) turn = c.turns.at(-1) ?? newTurn(c, 'turn:start');
  turn.keys.push(key);
  return turn;
}

function upsert(c, key, u, make) {
  let block = c.blocks.get(key);
  if (!block) {
    block = make();
    block.key = key;
    block.rev = 0;
    c.blocks.set(key, block);
    const turn = place(c, key, u);
    c.turnOf.set(key, turn);
    block.turn = turn.id;
  }
  block.rev += 1;
  c.rev += 1;
  return block;
}

function copy(block, u, without = []) {
  for (const [k, v] of Object.entries(u)) {
    if (k !== 'kind' && !without.includes(k)) block[k] = v;
  }
  // Fields an upsert leaves out are gone (upserts carry the whole state).
  for (const k of Object.keys(block)) {
    if (!(k in u) && !['key', 'rev', 'turn', 'kind', 'text', 'local', ...without].includes(k)) delete block[k];
  }
}

/** Applies one update to a chat. */
export function applyUpdate(c, u) {
  switch (u.kind) {
    case 'userMessage': {
      const b = upsert(c, u.key, u, () => ({ kind: 'user' }));
      copy(b, u, ['text']);
      b.text = u.text?.text ?? '';
      b.textPreview = u.text;
      return;
    }
    case 'assistantMessage': {
      const b = upsert(c, u.key, u, () => ({ kind: u.reasoning ? 'reasoning' : 'assistant', text: '' }));
      copy(b, u, ['text']);
      if (typeof u.text === 'string') b.text = u.text;
      return;
    }
    case 'assistantDelta': {
      const b = c.blocks.get(u.key);
      if (!b || typeof b.text !== 'string' || u.at > b.text.length) {
        c.missed += 1;
        return;
      }
      // What of the delta the text already holds is skipped: a delta applied twice is one.
      const have = b.text.length - u.at;
      if (have < u.delta.length) {
        b.text += u.delta.slice(have);
        b.rev += 1;
        c.rev += 1;
      }
      return;
    }
    case 'toolState': {
      const b = upsert(c, u.key, u, () => ({ kind: 'tool' }));
      copy(b, u, ['local']);
      return;
    }
    case 'permissionRequest': {
      const b = upsert(c, u.key, u, () => ({ kind: 'ask', local: {} }));
      copy(b, u, ['local']);
      return;
    }
    case 'status': {
      const b = upsert(c, u.key, u, () => ({ kind: 'status' }));
      copy(b, u);
      return;
    }
    case 'task':
      c.tasks.set(u.taskId, u);
      c.panelsRev += 1;
      return;
    case 'todos':
      c.todos = u.items;
      c.panelsRev += 1;
      return;
    case 'run':
      c.run = u;
      c.panelsRev += 1;
      c.rev += 1;
      return;
    case 'diff':
      c.files.set(u.path, u);
      c.panelsRev += 1;
      return;
    case 'unknownEvent':
      c.unknown.set(u.n, u);
      while (c.unknown.size > UNKNOWN_KEPT) c.unknown.delete(c.unknown.keys().next().value);
      c.panelsRev += 1;
      return;
    case 'oversized':
      // Fetched by the page (body.get) and applied as the update it is.
      c.oversized.push(u.ref);
      return;
    default:
      // A kind this page does not know yet: nothing to show.
  }
}

/** Applies one `bb/events` message. Returns the refs of oversized updates to fetch. */
export function applyMessage(store, payload) {
  let c = chat(store, payload.sessionId);
  if (payload.resync) {
    // Start over from what the updates rebuild; prompts still on their way stay.
    const pending = c.turns.filter((t) => t.pending && !t.user);
    const fresh = emptyChat();
    fresh.rev = c.rev + 1;
    for (const t of pending) fresh.turns.push({ ...t, keys: [] });
    fresh.earlier = payload.earlier ?? null;
    store.chats.set(payload.sessionId, fresh);
    c = fresh;
  }
  for (const u of payload.updates ?? []) applyUpdate(c, u);
  const fetch = c.oversized;
  c.oversized = [];
  return fetch;
}

/**
 * Puts a page of older turns (`bb.history`) before the turns the chat holds. A block held
 * already (a pending card the resync sent ahead of its turn) keeps its newer state and moves
 * to its turn. The chat is a new object, so the view draws it again. Returns the refs of
 * oversized updates to fetch.
 */
export function prependHistory(store, sessionId, page) {
  const c = chat(store, sessionId);
  const older = emptyChat();
  for (const u of page.updates ?? []) applyUpdate(older, u);
  const held = new Map(c.turns.map((t) => [t.id, t]));
  const moved = new Set();
  for (const t of older.turns) {
    const same = held.get(t.id);
    if (same) {
      t.user ??= same.user;
      t.keys.push(...same.keys.filter((k) => !t.keys.includes(k)));
      held.delete(t.id);
    }
    for (const key of [t.user, ...t.keys]) if (key) moved.add(key);
  }
  for (const [key, block] of older.blocks) if (!c.blocks.has(key)) c.blocks.set(key, block);
  const rest = [...held.values()]
    .map((t) => ({ ...t, keys: t.keys.filter((k) => !moved.has(k)) }))
    .filter((t) => t.user || t.pending || t.keys.length);
  // Cards sent ahead of turns not fetched yet stay above everything fetched.
  const ahead = rest.findIndex((t) => t.user || t.pending);
  const lead = ahead < 0 ? rest.length : ahead;
  const ordered = [...rest.slice(0, lead), ...older.turns, ...rest.slice(lead)];
  const next = { ...c, turns: ordered, earlier: page.earlier ?? null, loadingEarlier: false, rev: c.rev + 1 };
  for (const t of next.turns) {
    for (const key of [t.user, ...t.keys]) {
      if (!key) continue;
      next.turnOf.set(key, t);
      const b = next.blocks.get(key);
      if (b) b.turn = t.id;
    }
  }
  store.chats.set(sessionId, next);
  return older.oversized;
}

/** A prompt the person sent, shown at once; the bridge's user message replaces it. */
export function addPrompt(store, sessionId, messageId, text) {
  const c = chat(store, sessionId);
  const turn = turnById(c, messageId) ?? newTurn(c, messageId);
  if (!turn.user) turn.pending = { text, failed: null };
  c.rev += 1;
}

/** A prompt that could not be sent: its bubble says so. */
export function promptFailed(store, sessionId, messageId, reason) {
  const c = chat(store, sessionId);
  const turn = turnById(c, messageId);
  if (turn?.pending) turn.pending.failed = reason;
  c.rev += 1;
}

/** A prompt the engine took that no user message will stand for (a command): shown as sent. */
export function promptSent(store, sessionId, messageId) {
  const c = chat(store, sessionId);
  const turn = turnById(c, messageId);
  if (turn?.pending) turn.pending.sent = true;
  c.rev += 1;
}

/** Removes a failed prompt's bubble (its text went back to the composer). */
export function dropPrompt(store, sessionId, messageId) {
  const c = chat(store, sessionId);
  c.turns = c.turns.filter((t) => !(t.id === messageId && !t.user && t.keys.length === 0));
  c.rev += 1;
}

export function addNotice(store, kind, text) {
  store.notices.push({ id: `${Date.now()}-${store.notices.length}`, kind, text });
  store.rev += 1;
}

/** Pending approval cards of a chat. */
export function waitingAsks(c) {
  let n = 0;
  for (const b of c?.blocks.values() ?? []) if (b.kind === 'ask' && !b.resolved) n += 1;
  return n;
}
