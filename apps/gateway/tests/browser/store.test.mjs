// How the page applies the bridge's updates (apps/gateway/page/store.js), without a browser:
// `node --test`. The same rules as bb_protocol::v1::UpdatedView.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addPrompt, applyMessage, createStore, dropPrompt, prependHistory, promptFailed, waitingAsks } from '../../page/store.js';

const msg = (updates, extra = {}) => ({ sessionId: 's', events: [], updates, ...extra });
const text = (store, key) => store.chats.get('s').blocks.get(key).text;
const turns = (store) => store.chats.get('s').turns.map((t) => [t.user, ...t.keys].join(' '));

test('deltas append at their offset: a delta applied twice, or overlapping, is one', () => {
  const store = createStore();
  const updates = [
    { kind: 'assistantMessage', key: 'b1', status: 'streaming' },
    { kind: 'assistantDelta', key: 'b1', at: 0, delta: 'Hé' },
    { kind: 'assistantDelta', key: 'b1', at: 2, delta: 'llo 😀' },
  ];
  applyMessage(store, msg(updates));
  applyMessage(store, msg(updates));
  assert.equal(text(store, 'b1'), 'Héllo 😀');
  applyMessage(store, msg([{ kind: 'assistantDelta', key: 'b1', at: 6, delta: '😀!' }]));
  assert.equal(text(store, 'b1'), 'Héllo 😀!');
  // One past the end was missed: counted, not applied.
  applyMessage(store, msg([{ kind: 'assistantDelta', key: 'b1', at: 99, delta: 'x' }]));
  assert.equal(text(store, 'b1'), 'Héllo 😀!');
  assert.equal(store.chats.get('s').missed, 1);
  // A state keeps the text; a whole text replaces it.
  applyMessage(store, msg([{ kind: 'assistantMessage', key: 'b1', status: 'complete' }]));
  assert.equal(text(store, 'b1'), 'Héllo 😀!');
  applyMessage(store, msg([{ kind: 'assistantMessage', key: 'b1', status: 'complete', text: 'Final.' }]));
  assert.equal(text(store, 'b1'), 'Final.');
});

test('upserts carry the whole state: a field left out is gone', () => {
  const store = createStore();
  applyMessage(store, msg([{ kind: 'toolState', key: 'b1', state: 'running', tool: 'bash', output: { text: 'a' } }]));
  applyMessage(store, msg([{ kind: 'toolState', key: 'b1', state: 'done', tool: 'bash', summary: 'ok' }]));
  const b = store.chats.get('s').blocks.get('b1');
  assert.equal(b.state, 'done');
  assert.equal(b.summary, 'ok');
  assert.equal(b.output, undefined);
});

test('each prompt is a turn, and a reply goes under the prompt it answers', () => {
  const store = createStore();
  addPrompt(store, 's', 'm1', 'first');
  addPrompt(store, 's', 'm2', 'second');
  applyMessage(store, msg([
    { kind: 'userMessage', key: 'b1', messageId: 'm1', text: { text: 'first' } },
    { kind: 'assistantMessage', key: 'b2', messageId: 'm1', status: 'complete', text: 'one' },
    { kind: 'userMessage', key: 'b3', messageId: 'm2', text: { text: 'second' } },
    { kind: 'assistantMessage', key: 'b4', messageId: 'm2', status: 'streaming' },
    { kind: 'status', key: 'b5', messageId: 'm2', level: 'stopped', text: 'Stopped' },
  ]));
  assert.deepEqual(turns(store), ['b1 b2', 'b3 b4 b5']);
  // A user message and reply the engine made without a prompt of this page: a new turn.
  applyMessage(store, msg([
    { kind: 'userMessage', key: 'b6', text: { text: 'from elsewhere' } },
    { kind: 'assistantMessage', key: 'b7', status: 'complete', text: 'three' },
  ]));
  assert.deepEqual(turns(store), ['b1 b2', 'b3 b4 b5', 'b6 b7']);
});

test('a prompt shows at once; one that failed says so and can go', () => {
  const store = createStore();
  addPrompt(store, 's', 'm1', 'hello');
  const turn = store.chats.get('s').turns[0];
  assert.deepEqual(turn.pending, { text: 'hello', failed: null });
  promptFailed(store, 's', 'm1', 'not connected');
  assert.equal(turn.pending.failed, 'not connected');
  dropPrompt(store, 's', 'm1');
  assert.equal(store.chats.get('s').turns.length, 0);
});

test('a resync starts the session over from its updates, prompts on their way kept', () => {
  const store = createStore();
  applyMessage(store, msg([{ kind: 'assistantMessage', key: 'b1', status: 'streaming', text: 'stale' }]));
  addPrompt(store, 's', 'm9', 'on its way');
  applyMessage(store, msg([
    { kind: 'userMessage', key: 'b1', messageId: 'm1', text: { text: 'hi' } },
    { kind: 'assistantMessage', key: 'b2', messageId: 'm1', status: 'complete', text: 'fresh' },
    { kind: 'permissionRequest', key: 'b3', messageId: 'm1', ask: 'permission', prompt: 'Run ls', options: [] },
    { kind: 'run', phase: 'running', turns: 1, errors: 0 },
  ], { resync: true }));
  const c = store.chats.get('s');
  assert.deepEqual([...c.blocks.keys()], ['b1', 'b2', 'b3']);
  assert.equal(text(store, 'b2'), 'fresh');
  assert.equal(waitingAsks(c), 1);
  assert.equal(c.run.phase, 'running');
  assert.deepEqual(c.turns.map((t) => t.id), ['m9', 'm1']);
});

test('panels: tasks, todos, changed files, unknown events (the last 256)', () => {
  const store = createStore();
  const unknown = Array.from({ length: 300 }, (_, i) => ({ kind: 'unknownEvent', n: i + 1, type: 'x', size: 2, payload: '{}' }));
  applyMessage(store, msg([
    { kind: 'task', taskId: 't1', order: 0, state: 'running', rollup: 'failed' },
    { kind: 'task', taskId: 't2', parentTaskId: 't1', order: 1, state: 'failed', rollup: 'failed' },
    { kind: 'todos', items: [{ content: 'Write it', state: 'running' }] },
    { kind: 'diff', path: 'Makefile', change: 'added', additions: 7 },
    ...unknown,
  ]));
  const c = store.chats.get('s');
  assert.equal(c.tasks.get('t2').parentTaskId, 't1');
  assert.equal(c.todos[0].content, 'Write it');
  assert.equal(c.files.get('Makefile').additions, 7);
  assert.equal(c.unknown.size, 256);
  assert.equal([...c.unknown.keys()][0], 45);
});

test('an update of a kind the page does not know changes nothing', () => {
  const store = createStore();
  applyMessage(store, msg([{ kind: 'somethingNew', key: 'b1' }]));
  assert.equal(store.chats.get('s').blocks.size, 0);
});

test('a paged resync, then older pages put above it: turns in order, a pending card moved to its turn', () => {
  const store = createStore();
  const user = (key, m) => ({ kind: 'userMessage', key, messageId: m, text: { text: `asked ${m}` } });
  const reply = (key, m) => ({ kind: 'assistantMessage', key, messageId: m, status: 'complete', text: `answer ${m}` });
  const ask = (key, m, resolved) => ({ kind: 'permissionRequest', key, messageId: m, permissionId: `p-${m}`, ask: 'permission', prompt: 'Edit', options: [], resolved });
  // The last turn, the card still pending from turn m1 sent ahead of it, and what is older.
  applyMessage(store, msg([ask('b3', 'm1', false), user('b7', 'm3'), reply('b8', 'm3')], { resync: true, earlier: { before: 6, turns: 2 } }));
  assert.deepEqual(store.chats.get('s').earlier, { before: 6, turns: 2 });
  assert.deepEqual(turns(store), [' b3', 'b7 b8']);
  // The card was answered meanwhile: its newer state stays when its turn arrives.
  applyMessage(store, msg([{ ...ask('b3', 'm1', true), decision: 'denied' }]));
  prependHistory(store, 's', { updates: [user('b4', 'm2'), reply('b5', 'm2')], earlier: { before: 3, turns: 1 } });
  assert.deepEqual(turns(store), [' b3', 'b4 b5', 'b7 b8']);
  prependHistory(store, 's', { updates: [user('b1', 'm1'), reply('b2', 'm1'), ask('b3', 'm1', false)] });
  assert.deepEqual(turns(store), ['b1 b2 b3', 'b4 b5', 'b7 b8']);
  const c = store.chats.get('s');
  assert.equal(c.earlier, null);
  assert.equal(c.blocks.get('b3').resolved, true, 'the held (newer) state of the card wins');
  assert.equal(c.blocks.get('b3').turn, 'm1');
  assert.equal(c.turnOf.get('b3').id, 'm1');
  // A resync starts over, with its own `earlier`.
  applyMessage(store, msg([user('b7', 'm3')], { resync: true }));
  assert.equal(store.chats.get('s').earlier, null);
});
