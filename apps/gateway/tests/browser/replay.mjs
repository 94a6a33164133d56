// Applies `bb/events` messages with the page's own store (../../page/store.js) and prints
// what each session's chat holds, in the form the Rust test compares with the reference
// applier (bb_protocol::v1::UpdatedView).
// Usage: node replay.mjs <file: [{name, messages: [payload…]}]>  → one JSON line per name.

import { readFileSync } from 'node:fs';
import { applyMessage, createStore } from '../../page/store.js';

const KINDS = { user: 'user', assistant: 'text', reasoning: 'text', tool: 'tool', ask: 'ask', status: 'status' };
const drop = (o, ...keys) => Object.fromEntries(Object.entries(o ?? {}).filter(([k]) => !keys.includes(k)));
const byKey = (entries) => entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);

function normal(c) {
  return {
    blocks: [...c.blocks.values()].map((b) => {
      const fields = drop(b, 'key', 'rev', 'turn', 'kind', 'local', 'textPreview');
      return [b.key, KINDS[b.kind], fields];
    }),
    run: c.run ? drop(c.run, 'kind') : null,
    tasks: byKey([...c.tasks.entries()].map(([k, v]) => [k, drop(v, 'kind')])),
    todos: c.todos ?? null,
    files: byKey([...c.files.entries()].map(([k, v]) => [k, drop(v, 'kind')])),
    unknown: [...c.unknown.keys()],
    missed: c.missed,
  };
}

for (const { name, session, messages } of JSON.parse(readFileSync(process.argv[2], 'utf8'))) {
  const store = createStore();
  for (const m of messages) applyMessage(store, m);
  const c = store.chats.get(session);
  console.log(JSON.stringify({ name, state: c ? normal(c) : null }));
}
