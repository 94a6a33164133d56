// Rendering: the DOM is built once and updated from the store at most once per animation
// frame. The chat is one section per turn (a prompt and everything its reply did); blocks
// are keyed and only those whose revision moved are redrawn, so a stream of tokens never
// re-renders the page per token. Text always goes in as text.

import { counts, renderDiff } from './diff.js';
import { el } from './dom.js';
import { markdown } from './markdown.js';
import { Pickers } from './pickers.js';
import { questionForm } from './questions.js';
import { SlashMenu } from './slash.js';
import { waitingAsks } from './store.js';

const ENGINE_NAMES = { kilo: 'Kilo', breadboard: 'BreadBoard', acp: 'ACP agent' };
const ENGINE_STATES = { ready: 'ready', starting: 'starting…', reconnecting: 'reconnecting…', failed: 'unavailable', stopped: 'stopped' };
const SESSION_STATES = { running: 'working', failed: 'failed', completed: 'done', ended: 'ended', stopped: 'stopped', starting: 'starting', closed: 'closed' };
const TOOL_STATES = { running: 'running…', pending: 'waiting' };
const TASK_STATES = { queued: 'to do', running: 'in progress', completed: 'done', failed: 'failed' };
const CHANGES = { added: 'new', modified: 'changed', deleted: 'deleted', edited: 'edited' };

/** What the active session is doing, in words. */
export function chatStatus(store, c) {
  if (!store.activeSessionId) return '';
  if (store.running || c?.run?.phase === 'running') {
    return waitingAsks(c) ? 'Waiting for your approval' : 'Working…';
  }
  if (c?.run?.phase === 'retrying') return 'Retrying…';
  switch (c?.run?.outcome) {
    case 'stopped': return 'Stopped';
    case 'failed': return 'Failed';
    case 'done': return 'Done';
    default: return 'Ready';
  }
}

function pathsOf(view) {
  return (view.files ?? []).map((f) => f.path).filter(Boolean).join(', ');
}

function toolLabel(b) {
  const v = b.view;
  switch (v?.type) {
    case 'command':
      return { running: 'Running a command', error: 'Command failed' }[b.state] ?? 'Ran a command';
    case 'files':
      return !v.path || v.path === '.' || v.path === './' ? 'Listed the workspace' : `Listed ${v.path}`;
    case 'diff':
      return `${b.state === 'error' ? 'Did not change' : 'Changed'} ${pathsOf(v) || 'files'}`;
    case 'file':
      return b.title ?? v.path;
    default:
      return b.title ?? b.tool ?? 'Tool';
  }
}

export class View {
  constructor(root, store, actions) {
    this.store = store;
    this.actions = actions;
    this.turnNodes = new Map();
    this.blockNodes = new Map();
    this.shownSession = undefined;
    this.frame = 0;
    this.expanded = new Set();
    this.build(root);
  }

  build(root) {
    const a = this.actions;
    this.banner = el('div', { class: 'banner', role: 'status', 'aria-live': 'polite', 'data-testid': 'banner', hidden: true });
    this.notices = el('div', { class: 'notices', 'aria-live': 'polite', 'data-testid': 'notices' });
    this.engine = el('span', { class: 'engine', 'data-testid': 'engine' });
    this.sessionList = el('ul', { class: 'sessions', 'aria-label': 'Sessions', 'data-testid': 'sessions' });
    /** Each listed session's row, by id (`sessionNode`). */
    this.sessionNodes = new Map();
    this.chatTitle = el('h2', { class: 'chat-title', 'data-testid': 'chat-title' });
    this.chatStatus = el('span', { class: 'chat-status', role: 'status', 'data-testid': 'chat-status' });
    this.earlier = el('button', { type: 'button', class: 'link earlier', hidden: true, 'data-testid': 'show-earlier', onclick: () => a.showEarlier() });
    this.transcript = el('div', { class: 'transcript', role: 'log', 'aria-live': 'polite', 'aria-label': 'Conversation', 'data-testid': 'transcript' });
    this.input = el('textarea', { id: 'composer', rows: 3, placeholder: 'Ask the agent… (Enter sends, Shift+Enter for a new line)', 'aria-label': 'Message', 'data-testid': 'composer' });
    // Enter sends; Shift+Enter adds a line; Enter that ends an IME composition does neither.
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
        e.preventDefault();
        this.send();
      }
    });
    this.slash = new SlashMenu(this.input);
    this.pickers = new Pickers((sessionId, configId, value) => a.setConfig(sessionId, configId, value));
    this.closeButton = el('button', { type: 'button', class: 'link', 'aria-label': 'Close this session', title: 'Close this session (it stays listed)', 'data-testid': 'close-session', hidden: true, onclick: () => a.close(this.store.activeSessionId) }, 'Close');
    this.sendButton = el('button', { type: 'submit', 'data-testid': 'send' }, 'Send');
    this.stopButton = el('button', { type: 'button', class: 'secondary', 'data-testid': 'stop', onclick: () => a.stop() }, 'Stop');
    this.tasks = el('div', { class: 'tasks', 'data-testid': 'tasks' });
    this.run = el('div', { class: 'run', 'data-testid': 'run' });
    this.debug = el('ol', { class: 'debug', 'data-testid': 'debug' });
    this.debugCount = el('span', { class: 'count' });
    root.append(
      el('header', {}, el('h1', {}, 'bb-bridge'), this.engine),
      this.banner,
      this.notices,
      el('nav', { class: 'session-bar', 'aria-label': 'Sessions' },
        el('button', { type: 'button', 'data-testid': 'new-session', onclick: () => a.createSession() }, 'New session'),
        this.sessionList,
      ),
      el('main', {},
        el('div', { class: 'chat-head' }, this.chatTitle, this.chatStatus, this.closeButton),
        this.earlier,
        this.transcript,
        el('form', { class: 'composer', onsubmit: (e) => { e.preventDefault(); this.send(); } },
          this.slash.list,
          this.input,
          this.pickers.node,
          el('div', { class: 'row' }, this.stopButton, this.sendButton),
        ),
      ),
      el('details', { class: 'panel', 'data-testid': 'run-drawer' }, el('summary', {}, 'Run'), this.run),
      el('details', { class: 'panel', 'data-testid': 'tasks-drawer' }, el('summary', {}, 'Tasks'), this.tasks),
      el('details', { class: 'panel', 'data-testid': 'debug-drawer' }, el('summary', {}, 'Debug: events the bridge did not recognize ', this.debugCount), this.debug),
    );
  }

  send() {
    const text = this.input.value.trim();
    if (!text || !this.store.activeSessionId) return;
    this.input.value = '';
    this.actions.send(text);
  }

  /** Puts text back in the composer (a send that failed). */
  restore(text) {
    if (!this.input.value.trim()) this.input.value = text;
    this.input.focus();
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  render() {
    const s = this.store;
    const c = s.activeSessionId ? s.chats.get(s.activeSessionId) : null;
    this.renderBanner();
    const name = s.engineLabel ?? ENGINE_NAMES[s.engine?.kind] ?? '';
    // The engine's state at `bb.init`, then as the connection topic tells it.
    const live = { connected: 'ready', error: 'unavailable' }[s.connection.status];
    const state = live ?? ENGINE_STATES[s.engine?.status] ?? '';
    this.engine.textContent = name ? `${name}${state ? ` · ${state}` : ''}` : '';
    this.renderNotices();
    this.renderSessions();
    this.renderTranscript(c);
    this.renderRun(c);
    this.renderTasks(c);
    this.renderDebug(c);
    const active = s.sessions.find((x) => x.sessionId === s.activeSessionId);
    this.chatTitle.textContent = s.activeSessionId ? (active?.title || 'New session') : '';
    this.chatStatus.textContent = chatStatus(s, c);
    this.pickers.render(s.activeSessionId, c?.run);
    this.slash.setCommands(c?.run?.commands);
    this.closeButton.hidden = !s.activeSessionId;
    this.chatStatus.dataset.state = this.chatStatus.textContent.replace(/…$/, '').toLowerCase();
    this.sendButton.disabled = !s.activeSessionId;
    this.input.disabled = !s.activeSessionId;
    this.stopButton.disabled = !s.activeSessionId || !(s.running || c?.run?.phase === 'running');
  }

  renderBanner() {
    const { link, connection } = this.store;
    let text = '';
    if (link.state === 'closed' || link.state === 'reconnecting') {
      text = `Connection to the bridge lost${link.reason ? ` (${link.reason})` : ''}; reconnecting${link.attempt ? ` (attempt ${link.attempt})` : ''}…`;
    } else if (link.state === 'unresponsive') {
      text = `Bridge not responding (nothing heard for ${Math.round((link.silentMs ?? 0) / 1000)} s); waiting, then reconnecting…`;
    } else if (link.state === 'connecting') {
      text = 'Connecting to the bridge…';
    } else if (connection.status === 'connecting') {
      text = `Connecting to the engine${connection.retryCount ? ` (retry ${connection.retryCount})` : ''}…`;
    } else if (connection.status === 'error') {
      text = `The engine is unavailable: ${connection.lastError ?? 'unknown error'}${connection.restarting === false ? '. Restart the bridge to try again.' : ''}`;
    }
    this.banner.hidden = !text;
    this.banner.textContent = text;
  }

  renderNotices() {
    if (this.noticesRev === this.store.rev) return;
    this.noticesRev = this.store.rev;
    this.notices.replaceChildren(...this.store.notices.map((n) =>
      el('div', { class: `notice ${n.kind}`, role: 'alert', 'data-testid': `notice-${n.kind}` },
        el('span', {}, n.text),
        el('button', { type: 'button', class: 'link', 'aria-label': 'Dismiss notice', onclick: () => this.actions.dismiss(n.id) }, 'Dismiss'),
      )));
  }

  renderSessions() {
    const s = this.store;
    const key = JSON.stringify([s.sessions, s.activeSessionId, [...(s.deleting?.keys() ?? [])], [...(s.closed ?? [])]]);
    if (key === this.sessionsKey) return;
    this.sessionsKey = key;
    if (!s.sessions.length) {
      this.sessionNodes.clear();
      this.sessionList.replaceChildren(el('li', { class: 'empty' }, 'No sessions yet.'));
      return;
    }
    const listed = new Set(s.sessions.map((sess) => sess.sessionId));
    for (const id of this.sessionNodes.keys()) if (!listed.has(id)) this.sessionNodes.delete(id);
    const nodes = s.sessions.map((sess) => this.sessionNode(sess));
    // A session's row is kept and updated in place (its status, its title, which is
    // current), and rows move only when the order changes: a click whose press and release
    // straddle a `bb/state` (sent on every status change) still lands on the row it pressed.
    const shown = this.sessionList.children;
    if (nodes.length !== shown.length || nodes.some((n, i) => shown[i] !== n)) this.sessionList.replaceChildren(...nodes);
  }

  /** The row of session `sess` in the list: the one shown, brought up to date, or a new one. */
  sessionNode(sess) {
    const s = this.store;
    const id = sess.sessionId;
    const title = sess.title || 'New session';
    const deleting = Boolean(s.deleting?.has(id));
    let row = this.sessionNodes.get(id);
    if (row?.deleting !== deleting) {
      row = deleting ? this.deletingRow(id) : this.sessionRow(id);
      this.sessionNodes.set(id, row);
    }
    if (deleting) {
      row.text.textContent = `“${title}” deleted`;
      return row.li;
    }
    const active = id === s.activeSessionId;
    const words = s.closed?.has(id) ? 'closed' : SESSION_STATES[sess.status] ?? '';
    row.li.className = active ? 'active' : '';
    row.select.title = title;
    if (active) row.select.setAttribute('aria-current', 'true');
    else row.select.removeAttribute('aria-current');
    row.title.textContent = title;
    row.status.textContent = words ? ` · ${words}` : '';
    row.status.hidden = !words;
    row.remove.setAttribute('aria-label', `Delete session ${title}`);
    return row.li;
  }

  sessionRow(id) {
    const title = el('span', { class: 'title' });
    const status = el('small', { 'data-testid': 'session-status' });
    const select = el('button', { type: 'button', class: 'select', 'data-testid': 'session', 'data-session-id': id, onclick: () => this.actions.select(id) }, title, status);
    const remove = el('button', { type: 'button', class: 'link', 'data-testid': 'delete-session', onclick: () => this.actions.remove(id) }, 'Delete');
    return { deleting: false, li: el('li', {}, select, remove), select, title, status, remove };
  }

  deletingRow(id) {
    const text = el('span', {});
    const undo = el('button', { type: 'button', class: 'link', 'data-testid': 'undo-delete', onclick: () => this.actions.undoDelete(id) }, 'Undo');
    return { deleting: true, li: el('li', { class: 'deleting', 'data-testid': 'session-deleting' }, text, undo), text };
  }

  /** The button that fetches the turns a paged resync left out. */
  renderEarlier(c) {
    const e = this.store.activeSessionId ? c?.earlier : null;
    this.earlier.hidden = !e;
    this.earlier.disabled = Boolean(c?.loadingEarlier);
    if (e) this.earlier.textContent = c.loadingEarlier ? 'Loading earlier turns…' : `Show earlier (${e.turns} turn${e.turns === 1 ? '' : 's'})`;
  }

  renderTranscript(c) {
    this.renderEarlier(c);
    const id = this.store.activeSessionId;
    if (this.shownSession !== id || (c && this.shownChat !== c)) {
      this.shownSession = id;
      this.shownChat = c;
      this.turnNodes.clear();
      this.blockNodes.clear();
      this.transcript.replaceChildren();
      this.shownRev = -1;
    }
    if (!id) {
      this.transcript.replaceChildren(el('div', { class: 'empty hint', 'data-testid': 'empty' },
        el('p', {}, el('strong', {}, 'No session open.')),
        el('p', {}, 'Start one with “New session”, or pick one above. Then say what you want done: the agent answers here, shows the commands it runs and the changes it makes, and asks before it writes files or runs commands.')));
      return;
    }
    if (!c || !c.turns.length) {
      if (this.shownRev !== 'empty') {
        this.shownRev = 'empty';
        this.transcript.replaceChildren(el('div', { class: 'empty hint', 'data-testid': 'empty' },
          el('p', {}, 'Nothing here yet: send a message to start.')));
      }
      return;
    }
    if (c.rev === this.shownRev) return;
    if (this.shownRev === 'empty') this.transcript.replaceChildren();
    this.shownRev = c.rev;
    // Follow the conversation while its end is in view (the composer sticks below it).
    const stick = this.transcript.getBoundingClientRect().bottom <= window.innerHeight + 160;
    for (const turn of c.turns) {
      let t = this.turnNodes.get(turn.id);
      if (!t) {
        t = { node: el('section', { class: 'turn', 'data-testid': 'turn' }), user: null, userSig: null, blocks: el('div', { class: 'reply' }) };
        t.node.append(t.blocks);
        this.turnNodes.set(turn.id, t);
        this.transcript.append(t.node);
      }
      this.renderPrompt(c, turn, t);
      for (const key of turn.keys) {
        const b = c.blocks.get(key);
        if (!b) continue;
        const known = this.blockNodes.get(key);
        if (known && known.rev === b.rev && known.local === this.localSig(b)) continue;
        const node = this.renderBlock(b);
        if (known) known.node.replaceWith(node);
        else t.blocks.append(node);
        this.blockNodes.set(key, { node, rev: b.rev, local: this.localSig(b) });
      }
    }
    // Turns that went (a prompt that was not sent, taken back) leave the page too.
    const live = new Set(c.turns.map((t) => t.id));
    for (const [id, t] of this.turnNodes) {
      if (!live.has(id)) {
        t.node.remove();
        this.turnNodes.delete(id);
      }
    }
    if (stick) this.transcript.lastElementChild?.scrollIntoView({ block: 'end' });
  }

  localSig(b) {
    return b.local ? JSON.stringify(b.local) : '';
  }

  renderPrompt(c, turn, t) {
    const user = turn.user ? c.blocks.get(turn.user) : null;
    const sig = user ? `u:${user.rev}` : turn.pending ? `p:${turn.pending.failed ?? ''}:${turn.pending.sent ?? ''}` : 'none';
    if (sig === t.userSig) return;
    t.userSig = sig;
    let node = null;
    if (user) {
      node = el('div', { class: 'msg user', 'data-testid': 'msg-user' }, user.text);
    } else if (turn.pending) {
      node = el('div', { class: `msg user${turn.pending.sent ? '' : ' pending'}${turn.pending.failed ? ' failed' : ''}`, 'data-testid': 'msg-user' },
        turn.pending.text,
        turn.pending.failed ? el('small', { class: 'why', role: 'alert' }, `Not sent: ${turn.pending.failed}`) : null);
    }
    if (t.user) t.user.remove();
    t.user = node;
    if (node) t.node.prepend(node);
  }

  renderBlock(b) {
    switch (b.kind) {
      case 'user':
        return el('div', { class: 'msg user', 'data-testid': 'msg-user' }, b.text);
      case 'assistant':
        // A message with no text yet (or none at all: the engine only ran tools) takes no room.
        if (!b.text && !b.error) return el('div', { hidden: true, 'data-testid': 'msg-empty' });
        return el('div', { class: `msg assistant ${b.status}`, 'data-testid': 'msg-assistant', 'data-status': b.status },
          el('div', { class: 'md' }, markdown(b.text)),
          b.error ? el('p', { class: 'error' }, b.error) : null);
      case 'reasoning':
        if (!b.text) return el('div', { hidden: true, 'data-testid': 'msg-empty' });
        return el('details', { class: `msg reasoning ${b.status}`, 'data-testid': 'msg-reasoning', open: b.status === 'streaming' },
          el('summary', {}, b.status === 'streaming' ? 'Thinking…' : 'Thought'),
          el('div', { class: 'md' }, markdown(b.text)));
      case 'tool':
        return this.renderTool(b);
      case 'ask':
        return this.renderAsk(b);
      case 'status':
        return el('div', { class: `status-card ${b.level}`, role: b.level === 'error' || b.level === 'gap' ? 'alert' : 'status', 'data-testid': 'status-card', 'data-level': b.level },
          b.text);
      default:
        return el('div', {});
    }
  }

  renderTool(b) {
    const a = this.actions;
    const v = b.view;
    // A failure shows in the label (command, diff), its red border and its error text.
    const state = b.state === 'error' ? (v?.type === 'command' || v?.type === 'diff' ? '' : 'failed') : TOOL_STATES[b.state] ?? '';
    const parts = [];
    const full = b.local?.full;
    if (v?.type === 'command') {
      parts.push(el('pre', { class: 'command', 'data-testid': 'tool-command' }, `$ ${v.command}`));
      const out = full ?? b.output?.text;
      if (out) parts.push(el('pre', { class: 'output', 'data-testid': 'tool-output' }, out));
      if (v.exitCode) parts.push(el('p', { class: 'muted' }, `exit code ${v.exitCode}`));
    } else if (v?.type === 'files') {
      parts.push(el('ul', { class: 'files', 'data-testid': 'tool-files' },
        v.entries.map((f) => el('li', { class: f.dir ? 'dir' : 'file' }, f.dir ? `${f.path}/` : f.path)),
        v.more ? el('li', { class: 'muted' }, `and ${v.more} more`) : null));
      if (!v.entries.length) parts.push(el('p', { class: 'muted' }, 'The folder is empty.'));
    } else if (v?.type === 'diff') {
      for (const f of v.files) {
        const { add, del } = counts(f.unified.text);
        parts.push(el('div', { class: 'diff-file', 'data-testid': 'tool-diff' },
          el('div', { class: 'diff-head' }, el('strong', {}, f.path ?? 'diff'), el('span', { class: 'muted' }, ` +${add} −${del}`),
            f.path ? this.fileActions(f.path) : null),
          renderDiff(f.unified.text),
          f.unified.truncated && f.unified.ref ? el('button', { type: 'button', class: 'link', 'data-testid': 'show-full', onclick: () => a.showFull(b, f.unified.ref) }, 'Show the whole diff') : null));
      }
    } else {
      if (v?.type === 'file' && b.title) parts.push(el('p', { class: 'muted' }, v.path));
      const out = full ?? b.output?.text;
      if (b.input?.text && !v) {
        parts.push(el('details', { class: 'input' }, el('summary', {}, 'Input'), el('pre', {}, b.input.text)));
      }
      if (out) parts.push(el('pre', { class: 'output', 'data-testid': 'tool-output' }, out));
    }
    if (full === undefined && b.output?.truncated && b.output?.ref && v?.type !== 'diff' && v?.type !== 'files') {
      parts.push(el('button', { type: 'button', class: 'link', 'data-testid': 'show-full', onclick: () => a.showFull(b, b.output.ref) }, 'Show the whole output'));
    }
    return el('div', { class: 'tool', 'data-testid': 'tool', 'data-state': b.state, 'data-view': v?.type ?? 'text' },
      el('div', { class: 'tool-head' },
        el('strong', {}, toolLabel(b)),
        state ? el('span', { class: 'state' }, ` ${state}`) : null,
        b.summary ? el('span', { class: 'summary', 'data-testid': 'tool-summary' }, ` — ${b.summary}`) : null,
        b.tool && b.tool !== toolLabel(b) ? el('small', { class: 'muted tool-name' }, ` ${b.tool}`) : null),
      parts,
      b.error ? el('p', { class: 'error', 'data-testid': 'tool-error' }, b.error) : null,
    );
  }

  /** Open the diff of a file the agent changed, or the file itself, in the IDE. */
  fileActions(path) {
    const a = this.actions;
    return el('span', { class: 'file-actions' },
      el('button', { type: 'button', class: 'link', 'data-testid': 'open-diff', onclick: () => a.openDiff(path) }, 'Open diff'),
      el('button', { type: 'button', class: 'link', 'data-testid': 'open-file', onclick: () => a.openPath(path) }, 'Open file'));
  }

  renderAsk(b) {
    const a = this.actions;
    const local = b.local ?? {};
    const question = b.ask === 'question';
    const open = !b.resolved && !local.sent;
    const head = el('div', { class: 'ask-head' }, el('strong', {}, question ? 'Question' : open ? 'Approval needed' : 'Permission'), b.tool && !question ? el('small', { class: 'muted' }, ` ${b.tool}`) : null);
    const body = [el('p', { class: 'prompt', 'data-testid': 'approval-prompt' }, b.prompt)];
    const patterns = (b.patterns ?? []).filter((p) => p !== b.prompt && !b.prompt.endsWith(p));
    if (patterns.length) body.push(el('p', { class: 'muted' }, patterns.join(', ')));
    if (open && !question) {
      body.push(el('div', { class: 'row' }, b.options.map((o) =>
        el('button', { type: 'button', class: o.value === 'deny' ? 'danger' : o.value === 'allow_once' ? '' : 'secondary', 'data-testid': 'approval-option', 'data-value': o.value, onclick: () => a.decide(b, o.value) }, o.label))));
    } else if (open && question) {
      // Every question of the card in one form, answered at once.
      body.push(el('form', { class: 'questions', novalidate: true, 'data-testid': 'question-form', onsubmit: (e) => { e.preventDefault(); a.answer(b); } },
        questionForm(b, (qi, value, multiple) => a.choose(b, qi, value, multiple)),
        el('div', { class: 'row' },
          el('button', { type: 'submit', 'data-testid': 'answer' }, 'Answer'),
          el('button', { type: 'button', class: 'secondary', 'data-testid': 'dismiss-question', onclick: () => a.dismissQuestion(b) }, 'Dismiss'))));
    } else {
      // The first answer wins: a card another window's tab answered says so.
      const elsewhere = b.answeredBy?.tabId && b.answeredBy.tabId !== this.store.tabId ? ' in another window' : '';
      const words = b.resolved ? `${b.decision ?? 'answered'}${elsewhere}` : 'sending your answer…';
      body.push(el('p', { class: 'state', 'data-testid': 'approval-state' }, words.charAt(0).toUpperCase() + words.slice(1)));
    }
    if (local.error) body.push(el('p', { class: 'error', role: 'alert', 'data-testid': 'approval-error' }, local.error));
    return el('div', { class: `approval ${open ? 'pending' : 'settled'}`, role: 'group', 'aria-label': question ? 'Question' : `Approval needed: ${b.prompt}`, 'data-testid': 'approval', 'data-resolved': b.resolved ? 'true' : 'false' }, head, body);
  }

  renderRun(c) {
    const key = `${this.store.activeSessionId}:${c?.panelsRev}:${this.store.running}:${c?.rev}`;
    if (key === this.runKey) return;
    this.runKey = key;
    if (!this.store.activeSessionId) {
      this.run.replaceChildren(el('p', { class: 'empty' }, 'Open a session to see its run.'));
      return;
    }
    const r = c?.run;
    const files = [...(c?.files.values() ?? [])];
    this.run.replaceChildren(...[
      el('p', { 'data-testid': 'run-status' }, `${chatStatus(this.store, c)}${r?.turns ? ` · ${r.turns} turn${r.turns === 1 ? '' : 's'}` : ''}${r?.steps ? ` · ${r.steps} steps` : ''}${r?.errors ? ` · ${r.errors} error${r.errors === 1 ? '' : 's'}` : ''}`),
      r?.gap ? el('p', { class: 'error' }, 'Some engine events were lost: the conversation may miss steps.') : null,
      files.length
        ? el('div', {}, el('h3', {}, 'Files changed'), el('ul', { class: 'files-changed', 'data-testid': 'files-changed' }, files.map((f) =>
          el('li', {}, el('code', {}, f.path), ` ${CHANGES[f.change] ?? f.change}${f.additions != null ? ` +${f.additions}` : ''}${f.deletions != null ? ` −${f.deletions}` : ''}`, this.fileActions(f.path)))))
        : el('p', { class: 'empty' }, 'No files changed yet.'),
      r?.checkpoints?.length ? el('div', {}, el('h3', {}, 'Checkpoints'), el('ul', {}, r.checkpoints.map((cp) => el('li', {}, `${cp.preview ?? cp.id}${cp.restored ? ' (restored)' : ''}`)))) : null,
      r?.links?.length ? el('div', {}, el('h3', {}, 'Logs'), el('ul', {}, r.links.map((l) => el('li', {}, el('code', {}, l))))) : null,
    ].filter(Boolean));
  }

  renderTasks(c) {
    const key = `${this.store.activeSessionId}:${c?.panelsRev}`;
    if (key === this.tasksKey) return;
    this.tasksKey = key;
    const tasks = [...(c?.tasks.values() ?? [])].sort((x, y) => x.order - y.order);
    const todos = c?.todos ?? [];
    if (!tasks.length && !todos.length) {
      this.tasks.replaceChildren(el('p', { class: 'empty' }, 'No tasks yet.'));
      return;
    }
    const known = new Set(tasks.map((t) => t.taskId));
    const children = new Map();
    for (const t of tasks) {
      const parent = t.parentTaskId && known.has(t.parentTaskId) ? t.parentTaskId : null;
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(t);
    }
    const shown = new Set();
    const tree = (parent) => el('ul', {}, (children.get(parent) ?? []).filter((t) => !shown.has(t.taskId)).map((t) => {
      shown.add(t.taskId);
      const words = TASK_STATES[t.rollup] ?? t.rollup;
      return el('li', { class: `task ${t.rollup}` }, `${t.title ?? t.taskId}${t.lane ? ` (${t.lane})` : ''} — ${words}`, children.has(t.taskId) ? tree(t.taskId) : null);
    }));
    this.tasks.replaceChildren(...[
      tasks.length ? tree(null) : null,
      todos.length ? el('div', {}, el('h3', {}, 'To do'), el('ul', { class: 'todos' }, todos.map((t) => el('li', { class: `task ${t.state}` }, `${t.content} — ${TASK_STATES[t.state] ?? t.state}`)))) : null,
    ].filter(Boolean));
  }

  renderDebug(c) {
    const key = `${this.store.activeSessionId}:${c?.panelsRev}`;
    if (key === this.debugKey) return;
    this.debugKey = key;
    const unknown = [...(c?.unknown.values() ?? [])];
    this.debugCount.textContent = `(${unknown.length})`;
    this.debug.replaceChildren(...unknown.map((u) => el('li', {}, el('code', {}, u.type), el('pre', {}, u.payload))));
  }
}
