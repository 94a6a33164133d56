// The page's bridge liveness (apps/gateway/page/rpc.js), without a browser: `node --test`,
// on node's mocked timers and clock.

import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { Liveness, Rpc } from '../../page/rpc.js';

test('verdicts: two silent intervals are unresponsive, three are dead; a word resets', () => {
  let t = 0;
  const l = new Liveness({ now: () => t });
  assert.equal(l.verdict(), null, 'no verdict before the link opens');
  l.start();
  t = 9999;
  assert.equal(l.verdict(), 'alive');
  t = 10000;
  assert.equal(l.verdict(), 'unresponsive');
  l.heard(2000);
  assert.equal(l.verdict(), 'alive');
  t += 4000;
  assert.equal(l.verdict(), 'unresponsive', 'the heartbeat carries the interval');
  t += 2000;
  assert.equal(l.verdict(), 'dead');
  l.stop();
  assert.equal(l.verdict(), null, 'stopped (hidden, closed): no verdict');
});

class FakeSocket {
  static OPEN = 1;
  static CONNECTING = 0;
  static made = [];
  constructor(url) {
    this.url = url;
    this.readyState = FakeSocket.CONNECTING;
    this.listeners = {};
    this.closed = null;
    FakeSocket.made.push(this);
  }
  addEventListener(name, fn) {
    this.listeners[name] = fn;
  }
  emit(name, arg) {
    this.listeners[name]?.(arg);
  }
  open() {
    this.readyState = FakeSocket.OPEN;
    this.emit('open');
  }
  close(code, reason) {
    this.closed = { code, reason };
    this.readyState = 3;
  }
  send() {}
}

test('a silent gateway: "not responding" after two intervals, reconnecting after three', () => {
  mock.timers.enable({ apis: ['setInterval', 'setTimeout', 'Date'] });
  globalThis.WebSocket = FakeSocket;
  try {
    const statuses = [];
    const rpc = new Rpc({ url: 'ws://x/ws', token: 't', onEvent() {}, onStatus: (s) => statuses.push(s), onOpen() {} });
    rpc.connect();
    const first = FakeSocket.made.at(-1);
    first.open();
    const beat = JSON.stringify({ type: 'event', event: 'bb/connection', payload: { status: 'connected', heartbeat: 5000 } });
    for (let i = 0; i < 4; i += 1) {
      mock.timers.tick(5000);
      first.emit('message', { data: beat });
    }
    assert.deepEqual(statuses.map((s) => s.state), ['connecting', 'open'], 'heartbeats keep it open');

    mock.timers.tick(10000);
    assert.equal(statuses.at(-1).state, 'unresponsive');
    first.emit('message', { data: beat });
    mock.timers.tick(1000);
    assert.equal(statuses.at(-1).state, 'open', 'back when the bridge speaks');

    mock.timers.tick(15000);
    assert.equal(statuses.at(-1).state, 'closed');
    assert.equal(statuses.at(-1).reason, 'bridge not responding');
    assert.deepEqual(first.closed, { code: 4000, reason: 'bridge not responding' });
    const made = FakeSocket.made.length;
    mock.timers.tick(statuses.at(-1).retryInMs);
    assert.equal(FakeSocket.made.length, made + 1, 'a new socket');
    assert.equal(statuses.at(-1).state, 'reconnecting');
    first.emit('close', { code: 1006, reason: '' });
    assert.equal(statuses.at(-1).state, 'reconnecting', 'the old socket closing later changes nothing');
  } finally {
    mock.timers.reset();
    delete globalThis.WebSocket;
  }
});
