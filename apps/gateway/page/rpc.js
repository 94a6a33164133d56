// The WebSocket client: requests matched to responses by id, events handed on, reconnect
// with back-off. Speaks the gateway's envelope: {type: "request"|"response"|"event"}.

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
  }

  connect() {
    this.onStatus({ state: this.attempt ? 'reconnecting' : 'connecting', attempt: this.attempt });
    const socket = new WebSocket(this.url);
    this.socket = socket;
    socket.addEventListener('open', () => {
      this.attempt = 0;
      this.onStatus({ state: 'open', attempt: 0 });
      this.onOpen();
    });
    socket.addEventListener('message', (e) => this.receive(e.data));
    socket.addEventListener('close', (e) => {
      if (this.socket !== socket) return;
      for (const { reject } of this.pending.values()) {
        reject(Object.assign(new Error('the connection to the gateway closed'), { code: 'disconnected' }));
      }
      this.pending.clear();
      this.attempt += 1;
      const delay = Math.min(5000, 250 * 2 ** Math.min(this.attempt, 5));
      this.onStatus({ state: 'closed', attempt: this.attempt, code: e.code, reason: e.reason, retryInMs: delay });
      setTimeout(() => this.connect(), delay);
    });
  }

  receive(data) {
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      return;
    }
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
