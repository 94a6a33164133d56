// The page's transports: the WebSocket client of the gateway ({type: "request"|"response"|
// "event"}; reconnect with back-off) and the VS Code client (v1 envelopes over postMessage,
// below), both with one interface: request(method, params), onEvent(name, payload),
// onStatus(link), onOpen(). `link.state`: connecting, open, unresponsive (the bridge said
// nothing for two heartbeat intervals), closed, reconnecting.

// Whether the bridge is alive, from what the page hears: the bridge sends `bb/connection`
// with `heartbeat: <ms>` (5000) to every ready connection, so any message resets the clock.
// Silent for two intervals: "bridge not responding"; for three: the link is given up and
// reconnected. Paused while the page is hidden (a host may hold messages for a hidden
// webview). Pure over an injected clock, so it is tested without timers.
export class Liveness {
  constructor({ intervalMs = 5000, now = () => Date.now() } = {}) {
    this.intervalMs = intervalMs;
    this.now = now;
    this.last = null;
  }

  // The link opened, or the page was shown again: the clock starts now.
  start() {
    this.last = this.now();
  }

  // The page is hidden or the link closed: no verdict until `start`.
  stop() {
    this.last = null;
  }

  // Anything arrived from the bridge (`heartbeat` is a heartbeat's interval, when it was one).
  heard(heartbeat) {
    if (Number.isFinite(heartbeat) && heartbeat > 0) this.intervalMs = heartbeat;
    if (this.last !== null) this.last = this.now();
  }

  // `alive`, `unresponsive` (two intervals without a word) or `dead` (three), or `null`
  // while stopped.
  verdict() {
    if (this.last === null) return null;
    const silent = this.now() - this.last;
    if (silent >= 3 * this.intervalMs) return 'dead';
    if (silent >= 2 * this.intervalMs) return 'unresponsive';
    return 'alive';
  }
}

// Runs `liveness` once a second: reports `unresponsive` through `onStatus` (once, and
// `open` again when the bridge speaks), and calls `giveUp` when it is `dead`.
function watch(transport, liveness, giveUp) {
  let shown = 'alive';
  const tick = () => {
    const verdict = liveness.verdict();
    if (verdict === null) {
      shown = 'alive';
      return;
    }
    if (verdict === 'dead') {
      shown = 'alive';
      liveness.stop();
      giveUp();
    } else if (verdict !== shown) {
      shown = verdict;
      const silentMs = liveness.now() - liveness.last;
      transport.onStatus(verdict === 'unresponsive' ? { state: 'unresponsive', silentMs } : { state: 'open', attempt: 0 });
    }
  };
  setInterval(tick, 1000);
  if (typeof document !== 'undefined') {
    document.addEventListener('visibilitychange', () => (document.hidden ? liveness.stop() : liveness.start()));
  }
  return tick;
}

const heartbeatOf = (payload) => payload?.heartbeat;

export class Rpc {
  constructor({ url, token, onEvent, onStatus, onOpen }) {
    this.url = `${url}?token=${encodeURIComponent(token)}`;
    this.onEvent = onEvent;
    this.onStatus = onStatus;
    this.onOpen = onOpen;
    this.pending = new Map();
    this.attempt = 0;
    this.counter = 0;
    this.socket = null;
    this.liveness = new Liveness();
  }

  connect() {
    if (!this.watching) {
      this.watching = true;
      // A bridge silent for three intervals: drop the socket (it may hang half-open) and
      // reconnect; `bb.init({lastSeen})` then gets what was missed.
      watch(this, this.liveness, () => this.lost(this.socket, { code: 4000, reason: 'bridge not responding' }));
    }
    this.onStatus({ state: this.attempt ? 'reconnecting' : 'connecting', attempt: this.attempt });
    const socket = new WebSocket(this.url);
    this.socket = socket;
    socket.addEventListener('open', () => {
      this.attempt = 0;
      this.liveness.start();
      this.onStatus({ state: 'open', attempt: 0 });
      this.onOpen();
    });
    socket.addEventListener('message', (e) => this.receive(e.data));
    socket.addEventListener('close', (e) => this.lost(socket, e));
  }

  lost(socket, { code, reason }) {
    if (!socket || this.socket !== socket) return;
    this.socket = null;
    this.liveness.stop();
    if (socket.readyState === WebSocket.OPEN || socket.readyState === WebSocket.CONNECTING) socket.close(code, reason);
    for (const { reject } of this.pending.values()) {
      reject(Object.assign(new Error('the connection to the gateway closed'), { code: 'disconnected' }));
    }
    this.pending.clear();
    this.attempt += 1;
    const delay = Math.min(5000, 250 * 2 ** Math.min(this.attempt, 5));
    this.onStatus({ state: 'closed', attempt: this.attempt, code, reason, retryInMs: delay });
    setTimeout(() => this.connect(), delay);
  }

  receive(data) {
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      return;
    }
    this.liveness.heard(msg.type === 'event' && msg.event === 'bb/connection' ? heartbeatOf(msg.payload) : undefined);
    if (msg.type === 'response') {
      const waiter = this.pending.get(msg.id);
      if (!waiter) return;
      this.pending.delete(msg.id);
      if (msg.ok) waiter.resolve(msg.result);
      else waiter.reject(Object.assign(new Error(msg.error?.message ?? 'request failed'), { code: msg.error?.code, data: msg.error?.data }));
    } else if (msg.type === 'event') {
      this.onEvent(msg.event, msg.payload ?? {});
    }
  }

  request(method, params = {}) {
    const id = globalThis.crypto?.randomUUID ? crypto.randomUUID() : `r${Date.now()}-${++this.counter}`;
    return new Promise((resolve, reject) => {
      if (!this.socket || this.socket.readyState !== WebSocket.OPEN) {
        reject(Object.assign(new Error('not connected to the gateway'), { code: 'disconnected' }));
        return;
      }
      this.pending.set(id, { resolve, reject });
      this.socket.send(JSON.stringify({ type: 'request', id, method, params }));
    });
  }
}

// The VS Code transport: the same calls as v1 envelopes ({v: 1, kind: "req"|"res"|"evt"})
// over postMessage to the extension host, which relays them to the sidecar as JSON Lines.
// The host tells the page its link to the bridge ({type: "bb-link", state}); the page
// announces itself once per load ({type: "bb-ready"}) and calls `onOpen` whenever the link
// opens (then `bb.init({lastSeen})` gets what it missed). The host owns visibility.
export class VsCodeRpc {
  constructor({ vscode, onEvent, onStatus, onOpen }) {
    this.vscode = vscode;
    this.onEvent = onEvent;
    this.onStatus = onStatus;
    this.onOpen = onOpen;
    this.pending = new Map();
    this.counter = 0;
    this.open = false;
    this.hostOwnsVisibility = true;
    this.liveness = new Liveness();
  }

  connect() {
    // A bridge silent for three intervals: the page announces itself again, so the host
    // opens a fresh connection (restarting the sidecar if it is gone); `bb.init({lastSeen})`
    // then gets what was missed.
    watch(this, this.liveness, () => {
      this.open = false;
      this.failPending('the bridge stopped responding');
      this.onStatus({ state: 'reconnecting', attempt: 1, reason: 'bridge not responding' });
      this.vscode.postMessage({ type: 'bb-ready' });
    });
    window.addEventListener('message', (e) => this.receive(e.data));
    this.onStatus({ state: 'connecting', attempt: 0 });
    this.vscode.postMessage({ type: 'bb-ready' });
  }

  receive(msg) {
    if (!msg || typeof msg !== 'object') return;
    if (msg.type === 'bb-link') {
      const wasOpen = this.open;
      this.open = msg.state === 'open';
      if (this.open) this.liveness.start();
      else this.liveness.stop();
      if (!this.open && wasOpen) this.failPending('the connection to the bridge closed');
      this.onStatus({ state: msg.state, attempt: msg.attempt ?? 0, reason: msg.reason, retryInMs: msg.retryInMs });
      if (this.open) this.onOpen();
      return;
    }
    if (msg.v !== 1) return;
    this.liveness.heard(msg.kind === 'evt' && msg.topic === 'bb/connection' ? heartbeatOf(msg.payload) : undefined);
    if (msg.kind === 'res') {
      const waiter = this.pending.get(msg.id);
      if (!waiter) return;
      this.pending.delete(msg.id);
      if (msg.ok) waiter.resolve(msg.result);
      else waiter.reject(Object.assign(new Error(msg.error?.message ?? 'request failed'), { code: msg.error?.code, data: msg.error?.details }));
    } else if (msg.kind === 'evt') {
      this.onEvent(msg.topic, msg.payload ?? {});
    }
  }

  failPending(message) {
    for (const { reject } of this.pending.values()) reject(Object.assign(new Error(message), { code: 'disconnected' }));
    this.pending.clear();
  }

  request(method, params = {}) {
    this.counter += 1;
    const id = `p${Date.now().toString(36)}-${this.counter}`;
    return new Promise((resolve, reject) => {
      if (!this.open) {
        reject(Object.assign(new Error('not connected to the bridge'), { code: 'disconnected' }));
        return;
      }
      this.pending.set(id, { resolve, reject });
      this.vscode.postMessage({ v: 1, kind: 'req', id, method, params });
    });
  }
}

// The transport and the page's small persistent state, chosen from window.__APP_CONFIG__:
// `transport: "vscode"` speaks postMessage and keeps state in the webview's state (it
// survives the webview being recreated and the window reloading); otherwise the WebSocket
// at `wsUrl` with state in sessionStorage (per browser tab, survives a reload).
export function connectTransport(config, handlers) {
  if (config.transport === 'vscode' && typeof acquireVsCodeApi === 'function') {
    const vscode = acquireVsCodeApi();
    const state = () => vscode.getState() ?? {};
    const storage = {
      get: (key, fallback) => state()[key] ?? fallback,
      set: (key, value) => vscode.setState({ ...state(), [key]: value }),
    };
    return { rpc: new VsCodeRpc({ vscode, ...handlers }), storage };
  }
  const storage = {
    get(key, fallback) {
      try {
        return JSON.parse(sessionStorage.getItem(key)) ?? fallback;
      } catch {
        return fallback;
      }
    },
    set: (key, value) => sessionStorage.setItem(key, JSON.stringify(value)),
  };
  return { rpc: new Rpc({ url: config.wsUrl, token: config.authToken, ...handlers }), storage };
}
