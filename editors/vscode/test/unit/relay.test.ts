// The relay with the webview, the sidecar connection, the IDE and timers faked: framing in
// both directions, visibility (nothing posted while hidden, held messages posted once on
// show), trust, the IDE's own methods, diffs, and reconnecting after the sidecar went away.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { type BridgeLink, type Json, Relay, type RelayOptions } from '../../src/relay';

class FakeLink implements BridgeLink {
  written: Json[] = [];
  closed = false;
  private lines: ((line: string) => void)[] = [];
  private closes: ((reason: string) => void)[] = [];
  write(line: string): void {
    assert.ok(line.endsWith('\n') && !line.slice(0, -1).includes('\n'), 'one line per envelope');
    this.written.push(JSON.parse(line) as Json);
  }
  close(): void {
    this.closed = true;
  }
  onLine(l: (line: string) => void): void {
    this.lines.push(l);
  }
  onClose(l: (reason: string) => void): void {
    this.closes.push(l);
  }
  emit(message: Json): void {
    for (const l of this.lines) l(JSON.stringify(message));
  }
  drop(reason: string): void {
    for (const l of this.closes) l(reason);
  }
  requests(method: string): Json[] {
    return this.written.filter((m) => m.method === method);
  }
}

function setup(extra: Partial<RelayOptions> = {}) {
  const posted: Json[] = [];
  const links: FakeLink[] = [];
  const timers: (() => void)[] = [];
  const diffs: unknown[] = [];
  let trusted = false;
  const relay = new Relay({
    port: { post: (m) => posted.push(m) },
    connector: {
      connect: async () => {
        const link = new FakeLink();
        links.push(link);
        return link;
      },
    },
    ide: {
      has: (m) => m === 'shell.openPath',
      call: async (_m, p) => {
        if (p.path === '/etc/passwd') throw Object.assign(new Error('outside'), { code: 'path_outside_workspace' });
        return null;
      },
    },
    trusted: () => trusted,
    visible: true,
    onDiff: (d) => diffs.push(d),
    setTimer: (fn) => timers.push(fn),
    clearTimer: () => {},
    ...extra,
  });
  const flush = () => new Promise((r) => setImmediate(r));
  return { relay, posted, links, timers, diffs, flush, trust: () => (trusted = true) };
}

const evt = (seq: number) => ({ v: 1, kind: 'evt', topic: 'bb/events', payload: { sessionId: 's', tabId: 't', seq, events: [] } });

test('page requests go out as lines, bridge lines come back as messages', async () => {
  const t = setup();
  t.relay.fromWebview({ type: 'bb-ready' });
  await t.flush();
  assert.deepEqual(t.posted.map((m) => m.state), ['connecting', 'open']);
  t.relay.fromWebview({ v: 1, kind: 'req', id: 'p1', method: 'bb.listSessions', params: {} });
  assert.deepEqual(t.links[0].written, [{ v: 1, kind: 'req', id: 'p1', method: 'bb.listSessions', params: {} }]);
  t.links[0].emit({ v: 1, kind: 'res', id: 'p1', ok: true, result: { sessions: [] } });
  assert.deepEqual(t.posted.at(-1), { v: 1, kind: 'res', id: 'p1', ok: true, result: { sessions: [] } });
  t.relay.fromWebview({ v: 1, kind: 'evt', topic: 'bb/state', payload: {} });
  assert.equal(t.links[0].written.length, 1, 'the page may only send requests');
});

test('hidden: the bridge is told, nothing is posted, the held messages come once on show', async () => {
  const t = setup();
  t.relay.fromWebview({ type: 'bb-ready' });
  await t.flush();
  const link = t.links[0];
  link.emit(evt(1));
  t.relay.setVisible(false);
  assert.deepEqual(link.requests('bb.visibility').map((r) => r.params), [{ visible: false }]);
  const before = t.posted.length;
  link.emit(evt(2));
  link.emit({ v: 1, kind: 'res', id: 'p9', ok: true, result: {} });
  link.emit(evt(3));
  assert.equal(t.posted.length, before, 'nothing reaches a hidden webview');
  link.emit({ v: 1, kind: 'res', id: link.requests('bb.visibility')[0].id, ok: true, result: {} });
  t.relay.setVisible(true);
  assert.deepEqual(link.requests('bb.visibility').map((r) => r.params), [{ visible: false }, { visible: true }]);
  const seqs = t.posted.filter((m) => m.topic === 'bb/events').map((m) => (m.payload as Json).seq);
  assert.deepEqual(seqs, [1, 2, 3], 'in order, once');
  assert.ok(t.posted.some((m) => m.id === 'p9'), 'a response held while hidden is posted on show');
  assert.ok(!t.posted.some((m) => typeof m.id === 'string' && m.id.startsWith('bb-relay-')), "the relay's own responses stay with it");
  t.relay.setVisible(true);
  assert.equal(link.requests('bb.visibility').length, 2, 'no repeat for the same state');
});

test('too much held while hidden: dropped, and on show a fresh connection replays it', async () => {
  const t = setup({ holdLimit: 100 });
  t.relay.fromWebview({ type: 'bb-ready' });
  await t.flush();
  t.relay.setVisible(false);
  for (let i = 1; i <= 5; i++) t.links[0].emit(evt(i));
  t.relay.setVisible(true);
  await t.flush();
  assert.ok(t.links[0].closed, 'the old connection is closed');
  assert.equal(t.links.length, 2, 'a new connection');
  assert.ok(!t.posted.some((m) => m.topic === 'bb/events'), 'none of the dropped messages is posted');
  assert.equal(t.posted.at(-1)?.state, 'open', 'the page is told to bb.init again (it then asks from its lastSeen)');
});

test("bb.init carries the IDE's trust; granting trust re-sends it", async () => {
  const t = setup();
  t.relay.fromWebview({ type: 'bb-ready' });
  await t.flush();
  t.relay.fromWebview({ v: 1, kind: 'req', id: 'i', method: 'bb.init', params: { lastSeen: { t: 3 }, workspaceTrusted: true } });
  assert.deepEqual(t.links[0].requests('bb.init')[0].params, { lastSeen: { t: 3 }, workspaceTrusted: false });
  t.trust();
  t.relay.trustGranted();
  assert.deepEqual(t.links[0].requests('bb.init')[1].params, { workspaceTrusted: true });
});

test('a page that asks for updates only gets them; the relay still sees the events', async () => {
  const t = setup();
  t.relay.fromWebview({ type: 'bb-ready' });
  await t.flush();
  t.relay.fromWebview({ v: 1, kind: 'req', id: 'i', method: 'bb.init', params: { receive: 'updates' } });
  assert.deepEqual(t.links[0].requests('bb.init')[0].params, { receive: 'both', workspaceTrusted: false });
  t.trust();
  t.relay.trustGranted();
  assert.deepEqual(t.links[0].requests('bb.init')[1].params, { workspaceTrusted: true }, 'the choice stays');
  t.relay.fromWebview({ v: 1, kind: 'req', id: 'd', method: 'bb.openDiff', params: { sessionId: 's', filePath: 'Makefile' } });
  const update = { kind: 'status', key: 'b1', level: 'info', text: 'hi' };
  t.links[0].emit({ v: 1, kind: 'evt', topic: 'bb/events', payload: { sessionId: 's', seq: 4, events: [{ id: 'x', type: 'bridge.diff', payload: { filePath: 'Makefile', diff: '+a\n' } }], updates: [update] } });
  assert.deepEqual(t.diffs, [{ sessionId: 's', path: 'Makefile', patch: '+a\n' }]);
  assert.deepEqual(t.posted.at(-1), { v: 1, kind: 'evt', topic: 'bb/events', payload: { sessionId: 's', seq: 4, events: [], updates: [update] } });
});

test("the IDE's methods are answered by the relay, never sent to the bridge", async () => {
  const t = setup();
  t.relay.fromWebview({ type: 'bb-ready' });
  await t.flush();
  t.relay.fromWebview({ v: 1, kind: 'req', id: 'o1', method: 'shell.openPath', params: { path: 'src/a.c' } });
  t.relay.fromWebview({ v: 1, kind: 'req', id: 'o2', method: 'shell.openPath', params: { path: '/etc/passwd' } });
  await t.flush();
  assert.equal(t.links[0].written.length, 0);
  assert.deepEqual(t.posted.find((m) => m.id === 'o1'), { v: 1, kind: 'res', id: 'o1', ok: true, result: null });
  assert.equal(((t.posted.find((m) => m.id === 'o2')?.error) as Json).code, 'path_outside_workspace');
});

test('a diff the page asked for opens once', async () => {
  const t = setup();
  t.relay.fromWebview({ type: 'bb-ready' });
  await t.flush();
  t.relay.fromWebview({ v: 1, kind: 'req', id: 'd', method: 'bb.openDiff', params: { sessionId: 's', filePath: 'Makefile' } });
  const diff = { v: 1, kind: 'evt', topic: 'bb/events', payload: { sessionId: 's', events: [{ id: 'x', type: 'bridge.diff', payload: { filePath: 'Makefile', diff: '@@ -0,0 +1 @@\n+a\n' } }] } };
  t.links[0].emit(diff);
  t.links[0].emit(diff);
  assert.deepEqual(t.diffs, [{ sessionId: 's', path: 'Makefile', patch: '@@ -0,0 +1 @@\n+a\n' }]);
});

test("a diff of a multi-root workspace's session names the session's folder", async () => {
  const t = setup();
  t.relay.fromWebview({ type: 'bb-ready' });
  await t.flush();
  t.links[0].emit({ v: 1, kind: 'evt', topic: 'bb/state', payload: { sessions: [{ sessionId: 's', folder: '/w/b' }, { sessionId: 'r' }] } });
  t.relay.fromWebview({ v: 1, kind: 'req', id: 'd', method: 'bb.openDiff', params: { sessionId: 's', filePath: 'Makefile' } });
  t.links[0].emit({ v: 1, kind: 'evt', topic: 'bb/events', payload: { sessionId: 's', events: [{ id: 'x', type: 'bridge.diff', payload: { file: 'Makefile', patch: '+a\n' } }] } });
  assert.deepEqual(t.diffs, [{ sessionId: 's', path: 'Makefile', patch: '+a\n', folder: '/w/b' }]);
  assert.ok(t.posted.some((m) => m.topic === 'bb/state'), 'the state still reaches the page');
});

test('the sidecar went away: the page is told, the relay reconnects (the connector restarts it)', async () => {
  const t = setup();
  t.relay.fromWebview({ type: 'bb-ready' });
  await t.flush();
  t.links[0].drop('the sidecar closed the connection');
  const closed = t.posted.at(-1) as Json;
  assert.equal(closed.state, 'closed');
  assert.equal(closed.attempt, 1);
  t.relay.fromWebview({ v: 1, kind: 'req', id: 'late', method: 'bb.listSessions', params: {} });
  assert.equal(((t.posted.at(-1) as Json).error as Json).code, 'disconnected', 'a request meanwhile is answered, not lost');
  assert.equal(t.timers.length, 1);
  t.timers[0]();
  await t.flush();
  assert.equal(t.links.length, 2);
  assert.equal(t.posted.at(-1)?.state, 'open');
  t.relay.fromWebview({ v: 1, kind: 'req', id: 'p2', method: 'bb.listSessions', params: {} });
  assert.equal(t.links[1].written.length, 1, 'requests go to the new connection');
  assert.equal(t.links[0].written.length, 0);
});

test('a hidden view that reconnects tells the new connection it is hidden', async () => {
  const t = setup({ visible: false });
  t.relay.fromWebview({ type: 'bb-ready' });
  await t.flush();
  assert.deepEqual(t.links[0].requests('bb.visibility').map((r) => r.params), [{ visible: false }]);
});
