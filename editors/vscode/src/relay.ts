// The relay between one webview (the sidebar page, over postMessage) and one connection to
// the sidecar (v1 JSON Lines). It owns only what needs the IDE: visibility, workspace trust,
// the IDE's own methods (`shell.openPath`, `dialog.open`), and noticing diffs to open.
// Free of the VS Code API, so it is unit-tested with fakes (test/unit/relay.test.ts).
//
// Rules:
// * The page announces each new page instance with `{type: "bb-ready"}`; the relay then
//   opens a fresh connection (a page that holds nothing asks for everything with `bb.init`).
//   It tells the page the link's state with `{type: "bb-link", state, reason?, retryInMs?}`
//   (`connecting`, `open`, `closed`); a connection that drops is reopened with back-off (the
//   connector restarts the sidecar if it is gone) and the page, told `open` again, calls
//   `bb.init({lastSeen})` and gets exactly what it missed.
// * `bb.init` carries the IDE's trust, whatever the page sent (`workspaceTrusted`); when
//   trust is granted, the relay sends `bb.init({workspaceTrusted: true})` itself (a second
//   `bb.init` without `lastSeen` replays nothing, and keeps what the page receives).
// * The relay reads the engine events itself (a diff the page asked to open arrives as a
//   `bridge.diff` event): a page that asks for view-model updates only (`bb.init({receive:
//   "updates"})`) is sent both by the bridge, and the relay takes the events out before
//   posting each message.
// * Hidden: the relay tells the bridge (`bb.visibility {visible: false}`), which then holds
//   the tabs' events in their rings; what was already on its way is held here, in order, and
//   posted on show, after which the bridge sends what the tabs missed. Nothing is posted to a
//   hidden webview. Past `holdLimit` bytes the held messages are dropped and the connection
//   is reopened on show: the page's `bb.init({lastSeen})` then replays them from the rings.
// * Requests the relay makes itself carry ids `bb-relay-N`; their responses are not posted.

import { encodeLine } from './framing';

/** A message to or from the page: a v1 envelope, or one of the relay's own notices. */
export type Json = Record<string, unknown>;

/** The webview, as the relay uses it. */
export interface WebviewPort {
  post(message: Json): void;
}

/** One connection to the sidecar. */
export interface BridgeLink {
  write(line: string): void;
  close(): void;
  onLine(listener: (line: string) => void): void;
  onClose(listener: (reason: string) => void): void;
}

/** Opens connections to the sidecar (starting it when none runs). */
export interface Connector {
  connect(): Promise<BridgeLink>;
}

/** The IDE's own methods (`shell.openPath`, `dialog.open`). */
export interface IdeMethods {
  has(method: string): boolean;
  call(method: string, params: Json): Promise<unknown>;
}

export interface RelayOptions {
  port: WebviewPort;
  connector: Connector;
  ide: IdeMethods;
  /** The IDE's workspace trust now. */
  trusted: () => boolean;
  /** Whether the webview is visible now. */
  visible: boolean;
  /** A `bb/connection` payload passed by (for the status bar). */
  onConnection?: (payload: Json) => void;
  /** A diff the page asked to open (`bb.openDiff`) arrived as a `bridge.diff` event;
   * `folder`: the workspace folder its session works in, when `bb/state` said so. */
  onDiff?: (diff: { sessionId: string; path: string; patch: string; folder?: string }) => void;
  /** Logs one line (the Output channel). */
  log?: (line: string) => void;
  /** Bytes held while hidden before the relay gives up holding (default 32 MiB). */
  holdLimit?: number;
  /** Back-off of reconnects, ms (default 250 → 5000). */
  backoff?: (attempt: number) => number;
  /** Timers (tests pass fakes). */
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
}

const DIFF_WAIT_MS = 30_000;

export class Relay {
  private link: BridgeLink | null = null;
  private generation = 0;
  private attempt = 0;
  private retry: unknown = null;
  private visible: boolean;
  private held: Json[] = [];
  private heldBytes = 0;
  private overflowed = false;
  private counter = 0;
  private own = new Map<string, (res: Json) => void>();
  private diffs: { sessionId: string; path: string; until: number }[] = [];
  /** Each session's workspace folder, as the latest `bb/state` says (a multi-root workspace). */
  private folders = new Map<string, string>();
  private disposed = false;
  /** The page asked for updates only: the relay asks for both and keeps the events. */
  private updatesOnly = false;

  constructor(private readonly o: RelayOptions) {
    this.visible = o.visible;
  }

  /** A message the page posted. */
  fromWebview(msg: unknown): void {
    if (!msg || typeof msg !== 'object') return;
    const m = msg as Json;
    if (m.type === 'bb-ready') {
      this.reconnect(true);
      return;
    }
    if (m.v !== 1 || m.kind !== 'req' || typeof m.id !== 'string' || typeof m.method !== 'string') {
      this.log('protocol violation: the page sent something that is not a v1 request');
      return;
    }
    const params = (m.params && typeof m.params === 'object' ? m.params : {}) as Json;
    if (this.o.ide.has(m.method)) {
      void this.answerLocally(m.id, m.method, params);
      return;
    }
    if (m.method === 'bb.init') {
      if (params.receive !== undefined) this.updatesOnly = params.receive === 'updates';
      m.params = { ...params, workspaceTrusted: this.o.trusted(), ...(this.updatesOnly ? { receive: 'both' } : {}) };
    } else if (m.method === 'bb.openDiff' && typeof params.sessionId === 'string' && typeof params.filePath === 'string') {
      this.diffs.push({ sessionId: params.sessionId, path: params.filePath, until: Date.now() + DIFF_WAIT_MS });
    }
    if (!this.link) {
      this.post({ v: 1, kind: 'res', id: m.id, ok: false, error: { code: 'disconnected', message: 'the bridge is not connected yet; the page retries when it is' } });
      return;
    }
    this.link.write(encodeLine(m));
  }

  /** The webview was shown or hidden. */
  setVisible(visible: boolean): void {
    if (visible === this.visible) return;
    this.visible = visible;
    if (this.link) this.send('bb.visibility', { visible });
    if (!visible) return;
    if (this.overflowed) {
      this.overflowed = false;
      this.reconnect(false);
      return;
    }
    const held = this.held;
    this.held = [];
    this.heldBytes = 0;
    for (const message of held) this.o.port.post(message);
  }

  /** The IDE granted workspace trust: the bridge may now allow writes and commands. */
  trustGranted(): void {
    if (this.link) this.send('bb.init', { workspaceTrusted: true });
  }

  /** Sends a request of the relay's own; resolves with the whole response. */
  request(method: string, params: Json): Promise<Json> {
    return new Promise((resolve, reject) => {
      if (!this.link) {
        reject(new Error('the bridge is not connected'));
        return;
      }
      const id = this.send(method, params);
      this.own.set(id, resolve);
    });
  }

  dispose(): void {
    this.disposed = true;
    if (this.retry !== null) this.clearTimer(this.retry);
    this.link?.close();
    this.link = null;
  }

  private send(method: string, params: Json): string {
    this.counter += 1;
    const id = `bb-relay-${this.counter}`;
    this.link?.write(encodeLine({ v: 1, kind: 'req', id, method, params }));
    return id;
  }

  private async answerLocally(id: string, method: string, params: Json): Promise<void> {
    try {
      const result = await this.o.ide.call(method, params);
      this.post({ v: 1, kind: 'res', id, ok: true, result: result ?? null });
    } catch (err) {
      const e = err as { code?: string; message?: string };
      this.post({ v: 1, kind: 'res', id, ok: false, error: { code: e.code ?? 'ide_error', message: e.message ?? String(err) } });
    }
  }

  /** Drops the current connection and opens a new one (`fresh`: a new page instance). */
  private reconnect(fresh: boolean): void {
    if (this.disposed) return;
    if (fresh) this.attempt = 0;
    if (this.retry !== null) {
      this.clearTimer(this.retry);
      this.retry = null;
    }
    this.generation += 1;
    const generation = this.generation;
    const old = this.link;
    this.link = null;
    old?.close();
    this.held = [];
    this.heldBytes = 0;
    this.own.clear();
    this.o.port.post({ type: 'bb-link', state: 'connecting', attempt: this.attempt });
    this.o.connector.connect().then(
      (link) => {
        if (generation !== this.generation || this.disposed) {
          link.close();
          return;
        }
        this.link = link;
        link.onLine((line) => {
          if (generation === this.generation) this.fromBridge(line);
        });
        link.onClose((reason) => {
          if (generation === this.generation) this.dropped(reason);
        });
        this.attempt = 0;
        if (!this.visible) this.send('bb.visibility', { visible: false });
        this.post({ type: 'bb-link', state: 'open' });
      },
      (err: Error) => {
        if (generation === this.generation) this.dropped(err.message);
      },
    );
  }

  private dropped(reason: string): void {
    if (this.disposed) return;
    this.link = null;
    this.attempt += 1;
    const delay = this.o.backoff ? this.o.backoff(this.attempt) : Math.min(5000, 250 * 2 ** Math.min(this.attempt - 1, 5));
    this.log(`the bridge connection closed (${reason}); reconnecting in ${delay} ms`);
    this.post({ type: 'bb-link', state: 'closed', reason, attempt: this.attempt, retryInMs: delay });
    this.retry = this.setTimer(() => {
      this.retry = null;
      this.reconnect(false);
    }, delay);
  }

  private fromBridge(line: string): void {
    let msg: Json;
    try {
      msg = JSON.parse(line) as Json;
    } catch {
      this.log('the bridge sent a line that is not JSON; ignored');
      return;
    }
    if (msg.kind === 'res' && typeof msg.id === 'string' && msg.id.startsWith('bb-relay-')) {
      const waiter = this.own.get(msg.id);
      this.own.delete(msg.id);
      waiter?.(msg);
      return;
    }
    if (msg.kind === 'evt') this.observe(msg);
    if (this.updatesOnly && msg.topic === 'bb/events') {
      msg = { ...msg, payload: { ...(msg.payload as Json), events: [] } };
    }
    this.post(msg, line.length);
  }

  private observe(msg: Json): void {
    const payload = (msg.payload ?? {}) as Json;
    if (msg.topic === 'bb/connection') {
      this.o.onConnection?.(payload);
      return;
    }
    if (msg.topic === 'bb/state' && Array.isArray(payload.sessions)) {
      this.folders.clear();
      for (const s of payload.sessions as Json[]) {
        if (typeof s.sessionId === 'string' && typeof s.folder === 'string') this.folders.set(s.sessionId, s.folder);
      }
      return;
    }
    if (msg.topic !== 'bb/events' || this.diffs.length === 0 || !Array.isArray(payload.events)) return;
    const now = Date.now();
    this.diffs = this.diffs.filter((d) => d.until > now);
    for (const event of payload.events as Json[]) {
      if (event.type !== 'bridge.diff') continue;
      const p = (event.payload ?? {}) as Json;
      const path = typeof p.filePath === 'string' ? p.filePath : typeof p.file === 'string' ? p.file : null;
      const patch = typeof p.diff === 'string' ? p.diff : typeof p.patch === 'string' ? p.patch : null;
      if (path === null || patch === null) continue;
      const at = this.diffs.findIndex((d) => d.sessionId === payload.sessionId && samePath(d.path, path));
      if (at === -1) continue;
      this.diffs.splice(at, 1);
      const sessionId = String(payload.sessionId);
      const folder = this.folders.get(sessionId);
      this.o.onDiff?.(folder === undefined ? { sessionId, path, patch } : { sessionId, path, patch, folder });
    }
  }

  /** Posts now, or holds while hidden. */
  private post(message: Json, size = 0): void {
    if (this.visible) {
      this.o.port.post(message);
      return;
    }
    if (this.overflowed) return;
    this.held.push(message);
    this.heldBytes += size || 256;
    if (this.heldBytes > (this.o.holdLimit ?? 32 * 1024 * 1024)) {
      this.log('too much arrived while the view was hidden; it is replayed from the bridge on show');
      this.overflowed = true;
      this.held = [];
      this.heldBytes = 0;
    }
  }

  private log(line: string): void {
    this.o.log?.(line);
  }

  private setTimer(fn: () => void, ms: number): unknown {
    return this.o.setTimer ? this.o.setTimer(fn, ms) : setTimeout(fn, ms);
  }

  private clearTimer(handle: unknown): void {
    if (this.o.clearTimer) this.o.clearTimer(handle);
    else clearTimeout(handle as NodeJS.Timeout);
  }
}

/** The page names a file as the engine did (relative or absolute); compare by its tail. */
function samePath(asked: string, got: string): boolean {
  const norm = (p: string) => p.replace(/\\/g, '/').replace(/^\.\//, '');
  const a = norm(asked);
  const b = norm(got);
  return a === b || a.endsWith(`/${b}`) || b.endsWith(`/${a}`);
}
