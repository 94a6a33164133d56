// The page's reducers (apps/gateway/page/store.js), without a browser: `node --test`.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyEvents, createStore } from '../../page/store.js';

const ev = (id, type, payload = {}, extra = {}) => ({ id, type, payload, ...extra });

test('deltas of one message stream into one item; replayed ids are applied once', () => {
  const store = createStore();
  const batch = [
    ev('1', 'assistant.message.start', { item_id: 'm' }),
    ev('2', 'assistant.message.delta', { item_id: 'm', delta: 'Hel' }),
    ev('3', 'assistant.message.delta', { item_id: 'm', delta: 'lo' }),
  ];
  applyEvents(store, { sessionId: 's', events: batch });
  applyEvents(store, { sessionId: 's', events: batch });
  const view = store.views.get('s');
  assert.equal(view.items.length, 1);
  assert.equal(view.items[0].text, 'Hello');
  assert.equal(view.items[0].streaming, true);
  applyEvents(store, { sessionId: 's', events: [ev('4', 'assistant.message.end', { item_id: 'm' })] });
  assert.equal(view.items[0].streaming, false);
});

test('unknown events go to the debug drawer, known ones without a lane do not', () => {
  const store = createStore();
  applyEvents(store, { sessionId: 's', events: [
    ev('1', 'brand_new_thing', { x: 1 }),
    ev('2', 'checkpoint_list', {}, { class: 'checkpoint.list' }),
  ] });
  assert.deepEqual(store.debug.map((d) => d.type), ['brand_new_thing']);
  assert.equal(store.views.get('s').run.other, 1);
});

test('a tool result keeps its preview, diff and the ref of its full body', () => {
  const store = createStore();
  applyEvents(store, { sessionId: 's', events: [
    ev('1', 'tool_call', { call_id: 'c1', tool: 'apply_unified_patch', call: { function: { name: 'apply_unified_patch', arguments: '{}' } } }),
    ev('2', 'tool_result', { call_id: 'c1', tool: 'apply_unified_patch', result: 'x'.repeat(2000), display: { summary: 'Created Makefile', diff_blocks: [{ filePath: 'Makefile', unified: '+all:' }] } },
      { class: 'tool.result', truncated: { ref: 'body-7', fields: ['/result'], totalBytes: 2000 } }),
  ] });
  const view = store.views.get('s');
  assert.equal(view.items.length, 1);
  const tool = view.items[0];
  assert.equal(tool.status, 'done');
  assert.equal(tool.ref, 'body-7');
  assert.equal(tool.result.cut, true);
  assert.deepEqual(view.run.diffs, [{ file: 'Makefile', unified: '+all:' }]);
});

test('a permission request becomes a pending card, its response settles it', () => {
  const store = createStore();
  applyEvents(store, { sessionId: 's', events: [ev('1', 'permission_request', { request_id: 'p1', items: [{ category: 'edit', pattern: 'apply_unified_patch', metadata: { path: 'Makefile' } }] })] });
  const card = store.views.get('s').items[0];
  assert.equal(card.kind, 'permission');
  assert.equal(card.state, 'pending');
  assert.equal(card.detail, 'Makefile');
  applyEvents(store, { sessionId: 's', events: [ev('2', 'permission_response', { request_id: 'p1', decision: 'allow_once' })] });
  assert.equal(card.state, 'answered: allow_once');
});

test('a declared resync replaces the session from its view and says so', () => {
  const store = createStore();
  applyEvents(store, { sessionId: 's', events: [ev('1', 'assistant.message.delta', { item_id: 'old', delta: 'stale' })] });
  applyEvents(store, { sessionId: 's', events: [], resync: true, seq: 9, view: {
    transcript: { blocks: [
      { kind: 'user', blockId: 'b1', text: { text: 'hi' } },
      { kind: 'assistant', blockId: 'b2', text: 'fresh', status: 'complete' },
      { kind: 'approval', blockId: 'b3', requestId: 'p1', approval: 'permission', state: { state: 'pending' } },
    ] },
    run: { state: 'running', turn: 2 },
  } });
  const view = store.views.get('s');
  assert.deepEqual(view.items.map((i) => i.kind), ['user', 'assistant', 'permission']);
  assert.equal(view.items[1].text, 'fresh');
  assert.equal(view.items[2].state, 'pending');
  assert.equal(view.run.status, 'running');
  assert.equal(store.notices.at(-1).kind, 'resync');
});

test('todos and task events fill the tasks tree, children under their parent', () => {
  const store = createStore();
  applyEvents(store, { sessionId: 's', events: [
    ev('1', 'todo_update', { todos: [{ id: 't1', content: 'Write Makefile', status: 'in_progress' }, { id: 't2', content: 'Run make', status: 'pending' }] }),
    ev('2', 'task_event', { task: { task_id: 't3', parent_id: 't1', title: 'Check flags', status: 'completed' } }),
  ] });
  const tasks = store.views.get('s').tasks;
  assert.deepEqual([...tasks.keys()], ['t1', 't2', 't3']);
  assert.equal(tasks.get('t3').parent, 't1');
  assert.equal(tasks.get('t1').status, 'in_progress');
});

test('the bridge names who answered first; the engine\'s later response keeps it', () => {
  const store = createStore();
  applyEvents(store, { sessionId: 's', events: [ev('1', 'permission_request', { request_id: 'p1' })] });
  const closed = { sessionID: 's', requestId: 'p1', decision: 'allow_once', answeredBy: { connection: 0, tabId: 'tab-a' } };
  applyEvents(store, { sessionId: 's', events: [ev('bb-prompt-closed-1', 'bb.prompt.closed', closed, { class: 'permission.response' })] });
  const card = store.views.get('s').items[0];
  assert.equal(card.state, 'answered: allow_once (from tab tab-a)');
  applyEvents(store, { sessionId: 's', events: [ev('2', 'permission_response', { request_id: 'p1', decision: 'allow_once' })] });
  assert.equal(card.state, 'answered: allow_once (from tab tab-a)');
});
