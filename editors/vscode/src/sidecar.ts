// The workspace's sidecar: `bb-sidecar --listen SOCKET --linger SECS`, one per workspace,
// shared by every window of it and outliving a window reload by its linger. Connecting tries
// the socket first and starts a sidecar only when none answers; a second start on a live
// socket is harmless (the sidecar says so and exits 0). The sidecar runs detached (its own
// session), its stderr appended to a log file in the state directory that the Output channel
// follows, so a reloaded window still shows the logs of the sidecar it re-attaches to.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

import { LineSplitter } from './framing';
import type { BridgeLink, Connector } from './relay';

export interface SidecarOptions {
  /** The `bb-sidecar` binary. */
  binary: string;
  /** Engine flags (everything but `--listen` / `--linger`). */
  args: string[];
  /** Seconds to linger after the last client. */
  linger: number;
  /** The sidecar's environment (secrets go here, never into `args`). */
  env: NodeJS.ProcessEnv;
  /** Working directory. */
  cwd: string;
  socketPath: string;
  logPath: string;
  /** How long to wait for a sidecar to accept (default 30 s). */
  startTimeoutMs?: number;
  log?: (line: string) => void;
}

/** Unix socket paths are short (108 bytes with the NUL on Linux): the socket goes in the
 * state directory when it fits, else in a private directory under the runtime or temp dir,
 * named by a hash of the state directory (so still one per workspace). */
export function socketPathFor(stateDir: string, env = process.env): string {
  const inState = path.join(stateDir, 'bridge.sock');
  if (Buffer.byteLength(inState) <= 100) return inState;
  const hash = createHash('sha256').update(stateDir).digest('hex').slice(0, 20);
  const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
  const base = env.XDG_RUNTIME_DIR && fs.existsSync(env.XDG_RUNTIME_DIR) ? path.join(env.XDG_RUNTIME_DIR, 'bb-bridge') : path.join(os.tmpdir(), `bb-bridge-${uid}`);
  return path.join(base, `${hash}.sock`);
}

/** A connection over a socket, as the relay uses it. */
export function socketLink(socket: net.Socket, log?: (line: string) => void): BridgeLink {
  const splitter = new LineSplitter();
  const lineListeners: ((line: string) => void)[] = [];
  const closeListeners: ((reason: string) => void)[] = [];
  let closed = false;
  const close = (reason: string) => {
    if (closed) return;
    closed = true;
    for (const l of closeListeners) l(reason);
  };
  socket.on('data', (chunk: Buffer) => {
    let lines: string[];
    try {
      lines = splitter.push(chunk);
    } catch (err) {
      log?.(String(err));
      socket.destroy();
      return;
    }
    for (const line of lines) for (const l of lineListeners) l(line);
  });
  socket.on('error', (err) => close(err.message));
  socket.on('close', () => close('the sidecar closed the connection'));
  return {
    write: (line) => {
      if (!closed) socket.write(line);
    },
    close: () => {
      closed = true;
      socket.destroy();
    },
    onLine: (l) => lineListeners.push(l),
    onClose: (l) => closeListeners.push(l),
  };
}

export class Sidecar implements Connector {
  private starting: Promise<void> | null = null;

  constructor(private options: SidecarOptions) {}

  /** New options (settings changed); take effect at the next start. */
  update(options: SidecarOptions): void {
    this.options = options;
  }

  get socketPath(): string {
    return this.options.socketPath;
  }

  /** Connects to the running sidecar, starting one when none answers. A sidecar that said
   * it listens but cannot be reached right after is not started again here: the caller's
   * back-off paces the next try (no start loop), and the error carries its log's tail. */
  async connect(): Promise<BridgeLink> {
    const deadline = Date.now() + (this.options.startTimeoutMs ?? 30_000);
    let lastError = 'no sidecar answered';
    let started = 0;
    for (;;) {
      try {
        const socket = await dial(this.options.socketPath);
        return socketLink(socket, this.options.log);
      } catch (err) {
        lastError = (err as Error).message;
      }
      if (started >= 2) throw new Error(`the bridge started but cannot be reached at ${this.options.socketPath} (${lastError}): ${logTail(this.options.logPath)}`);
      if (Date.now() > deadline) throw new Error(`cannot reach the bridge at ${this.options.socketPath}: ${lastError}`);
      started += 1;
      this.starting ??= this.start().finally(() => {
        this.starting = null;
      });
      await this.starting;
      await sleep(100);
    }
  }

  /** The pid of the sidecar that owns the socket (from its lock file), if one runs. */
  ownerPid(): number | undefined {
    try {
      const pid = Number.parseInt(fs.readFileSync(`${this.options.socketPath}.lock`, 'utf8'), 10);
      if (!Number.isInteger(pid) || pid <= 0) return undefined;
      process.kill(pid, 0);
      return pid;
    } catch {
      return undefined;
    }
  }

  /** Stops the running sidecar (SIGTERM: it answers what is in flight and stops its
   * engine); resolves once its socket is gone. */
  async stop(timeoutMs = 20_000): Promise<void> {
    const pid = this.ownerPid();
    if (pid === undefined) return;
    process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!alive(pid)) return;
      await sleep(100);
    }
    throw new Error(`the sidecar (pid ${pid}) did not stop within ${timeoutMs} ms`);
  }

  /** Starts a sidecar; resolves once it listens, or said another one does. */
  private start(): Promise<void> {
    const o = this.options;
    fs.mkdirSync(path.dirname(o.logPath), { recursive: true, mode: 0o700 });
    const logFd = fs.openSync(o.logPath, 'a', 0o600);
    const args = [...listenArgs(o), ...o.args];
    o.log?.(`starting ${o.binary} ${args.join(' ')}`);
    return new Promise((resolve, reject) => {
      let child: ReturnType<typeof spawn>;
      try {
        child = spawn(o.binary, args, { cwd: o.cwd, env: o.env, detached: true, stdio: ['ignore', 'pipe', logFd] });
      } catch (err) {
        fs.closeSync(logFd);
        reject(err as Error);
        return;
      }
      fs.closeSync(logFd);
      let said = '';
      const stdout = child.stdout;
      if (!stdout) {
        reject(new Error('the sidecar has no stdout'));
        return;
      }
      stdout.setEncoding('utf8');
      stdout.on('data', (text: string) => {
        said += text;
        if (said.includes('\n')) {
          o.log?.(`sidecar: ${said.trim()}`);
          stdout.destroy();
          child.unref();
          resolve();
        }
      });
      child.on('error', (err) => reject(new Error(`cannot start ${o.binary}: ${err.message}`)));
      child.on('exit', (code, signal) => {
        if (code === 0 && said.includes('already serving')) return resolve();
        if (said.includes('listening on')) return;
        reject(new Error(`the sidecar exited (${signal ?? `code ${code}`}) before listening: ${logTail(o.logPath)}`));
      });
    });
  }
}

/** `--listen` / `--linger` come first, so an ACP agent's command may follow `--` last. */
function listenArgs(o: SidecarOptions): string[] {
  return ['--listen', o.socketPath, '--linger', String(Math.max(1, Math.round(o.linger)))];
}

function dial(socketPath: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(socketPath);
    socket.once('connect', () => {
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** The last lines of the log, for an error message. */
export function logTail(logPath: string, lines = 5): string {
  try {
    return fs.readFileSync(logPath, 'utf8').trimEnd().split('\n').slice(-lines).join(' | ');
  } catch {
    return '(no log)';
  }
}

/** Follows the log file: new text goes to `sink` (the Output channel). */
export class LogTail {
  private offset = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly logPath: string, private readonly sink: (text: string) => void) {}

  /** Starts from the last `keep` bytes already there. */
  start(keep = 16 * 1024, intervalMs = 500): void {
    try {
      this.offset = Math.max(0, fs.statSync(this.logPath).size - keep);
    } catch {
      this.offset = 0;
    }
    this.poll();
    this.timer = setInterval(() => this.poll(), intervalMs);
  }

  poll(): void {
    let size: number;
    try {
      size = fs.statSync(this.logPath).size;
    } catch {
      return;
    }
    if (size < this.offset) this.offset = 0;
    if (size === this.offset) return;
    const fd = fs.openSync(this.logPath, 'r');
    try {
      const buf = Buffer.alloc(Math.min(size - this.offset, 4 * 1024 * 1024));
      const n = fs.readSync(fd, buf, 0, buf.length, this.offset);
      this.offset += n;
      this.sink(buf.subarray(0, n).toString('utf8'));
    } finally {
      fs.closeSync(fd);
    }
  }

  dispose(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
