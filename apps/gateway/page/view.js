// Rendering: the DOM is built once and updated from the store at most once per animation
// frame; transcript items are keyed and only the ones whose revision moved are redrawn, so
// a stream of tokens never re-renders the page per token. Text always goes in as text.

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v === true ? '' : v);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

export class View {
  constructor(root, store, actions) {
    this.store = store;
    this.actions = actions;
    this.itemNodes = new Map();
    this.shownSession = null;
    this.frame = 0;
    this.build(root);
  }

  build(root) {
    const a = this.actions;
    this.banner = el('div', { class: 'banner', role: 'status', 'aria-live': 'polite', 'data-testid': 'banner', hidden: true });
    this.notices = el('div', { class: 'notices', 'aria-live': 'polite', 'data-testid': 'notices' });
    this.engine = el('span', { class: 'engine', 'data-testid': 'engine' });
    this.sessionList = el('ul', { class: 'sessions', 'aria-label': 'Sessions', 'data-testid': 'sessions' });
    this.transcript = el('div', { class: 'transcript', role: 'log', 'aria-live': 'polite', 'aria-label': 'Transcript', 'data-testid': 'transcript' });
    this.input = el('textarea', { id: 'composer', rows: 3, placeholder: 'Message the agent (Enter to send, Shift+Enter for a new line)', 'aria-label': 'Message', 'data-testid': 'composer' });
    // Enter sends; Shift+Enter adds a line; Enter that ends an IME composition does neither.
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
        e.preventDefault();
        this.send();
      }
    });
    this.sendButton = el('button', { type: 'button', 'data-testid': 'send', onclick: () => this.send() }, 'Send');
    this.stopButton = el('button', { type: 'button', class: 'secondary', 'data-testid': 'stop', onclick: () => a.stop() }, 'Stop');
    this.tasks = el('div', { class: 'tasks', 'data-testid': 'tasks' });
    this.run = el('div', { class: 'run', 'data-testid': 'run' });
    this.debug = el('ol', { class: 'debug', 'data-testid': 'debug' });
    this.debugCount = el('span', { class: 'count' });
    root.append(
      el('header', {},
        el('h1', {}, 'bb-bridge'),
        this.engine,
      ),
      this.banner,
      this.notices,
      el('section', { class: 'session-bar', 'aria-label': 'Sessions' },
        el('button', { type: 'button', 'data-testid': 'new-session', onclick: () => a.createSession() }, 'New session'),
        this.sessionList,
      ),
      el('main', {},
        this.transcript,
        el('form', { class: 'composer', onsubmit: (e) => { e.preventDefault(); this.send(); } },
          this.input,
          el('div', { class: 'row' }, this.sendButton, this.stopButton),
        ),
      ),
      el('details', { class: 'panel', open: true }, el('summary', {}, 'Run'), this.run),
      el('details', { class: 'panel' }, el('summary', {}, 'Tasks'), this.tasks),
      el('details', { class: 'panel', 'data-testid': 'debug-drawer' }, el('summary', {}, 'Debug: unknown events ', this.debugCount), this.debug),
    );
  }

  // The box is cleared at once; a send that fails puts the text back (unless something new
  // was typed meanwhile).
  async send() {
    const typed = this.input.value;
    const text = typed.trim();
    if (!text) return;
    this.input.value = '';
    const sent = await this.actions.send(text);
    if (sent === false && this.input.value === '') this.input.value = typed;
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
    this.renderBanner();
    this.engine.textContent = s.engine ? `${s.engine.kind} · ${s.engine.status}` : '';
    this.renderNotices();
    this.renderSessions();
    this.renderTranscript();
    this.renderRun();
    this.renderTasks();
    this.renderDebug();
    const active = s.activeSessionId;
    this.sendButton.disabled = !active;
    this.stopButton.disabled = !active || !s.running;
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
      text = `Engine connecting${connection.retryCount ? ` (retry ${connection.retryCount})` : ''}…`;
    } else if (connection.status === 'error') {
      text = `Engine unavailable: ${connection.lastError ?? 'unknown error'}${connection.restarting === false ? ' (not restarting; restart the bridge)' : ''}`;
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
    const key = JSON.stringify([s.sessions, s.activeSessionId]);
    if (key === this.sessionsKey) return;
    this.sessionsKey = key;
    this.sessionList.replaceChildren(...s.sessions.map((sess) => {
      const active = sess.sessionId === s.activeSessionId;
      return el('li', { class: active ? 'active' : '' },
        el('button', { type: 'button', class: 'select', 'aria-current': active ? 'true' : null, 'data-testid': 'session', 'data-session-id': sess.sessionId, onclick: () => this.actions.select(sess.sessionId) },
          sess.title || sess.sessionId.slice(0, 12), sess.status ? el('small', {}, ` ${sess.status}`) : null),
        el('button', { type: 'button', class: 'link', 'aria-label': `Delete session ${sess.title || sess.sessionId}`, 'data-testid': 'delete-session', onclick: () => this.actions.remove(sess.sessionId) }, 'Delete'),
      );
    }));
  }

  renderTranscript() {
    const id = this.store.activeSessionId;
    const view = id ? this.store.views.get(id) : null;
    if (this.shownSession !== id) {
      this.shownSession = id;
      this.itemNodes.clear();
      this.transcript.replaceChildren();
      this.shownRev = -1;
      if (!id) this.transcript.append(el('p', { class: 'empty' }, 'Create or select a session to start.'));
    }
    if (!view || view.rev === this.shownRev) return;
    this.shownRev = view.rev;
    const stick = this.transcript.scrollTop + this.transcript.clientHeight >= this.transcript.scrollHeight - 24;
    if (view.items.length < this.itemNodes.size) {
      this.itemNodes.clear();
      this.transcript.replaceChildren();
    }
    for (const item of view.items) {
      const known = this.itemNodes.get(item.key);
      if (known && known.rev === item.rev) continue;
      const node = this.renderItem(item);
      if (known) known.node.replaceWith(node);
      else this.transcript.append(node);
      this.itemNodes.set(item.key, { node, rev: item.rev });
    }
    if (stick) this.transcript.scrollTop = this.transcript.scrollHeight;
  }

  renderItem(item) {
    const a = this.actions;
    switch (item.kind) {
      case 'user':
        return el('div', { class: 'msg user', 'data-testid': 'msg-user' }, item.text);
      case 'assistant':
      case 'reasoning':
        return el('div', { class: `msg ${item.kind}${item.streaming ? ' streaming' : ''}`, 'data-testid': `msg-${item.kind}` }, item.text);
      case 'tool': {
        const full = item.fullOutput ? el('pre', { class: 'full', 'data-testid': 'tool-full' }, item.fullOutput) : null;
        const canExpand = !item.fullOutput && (item.ref || item.result?.cut);
        return el('div', { class: `tool ${item.status}`, 'data-testid': 'tool' },
          el('div', { class: 'tool-head' }, el('strong', {}, item.name ?? 'tool'), el('span', { class: 'status' }, ` ${item.status ?? ''}`), item.summary ? el('span', {}, ` — ${item.summary}`) : null),
          item.args?.text ? el('pre', { class: 'args' }, item.args.text) : null,
          item.result && !full ? el('pre', { class: 'preview', 'data-testid': 'tool-preview' }, item.result.text) : null,
          full,
          canExpand ? el('button', { type: 'button', class: 'link', 'data-testid': 'show-full', onclick: () => a.showFull(item) }, 'Show full output') : null,
        );
      }
      case 'permission': {
        const pending = item.state === 'pending';
        return el('div', { class: `approval ${pending ? 'pending' : 'settled'}`, role: 'group', 'aria-label': `Permission request: ${item.title}`, 'data-testid': 'approval' },
          el('div', {}, el('strong', {}, 'Approval needed: '), `${item.title}${item.tool ? ` (${item.tool})` : ''}${item.detail ? ` on ${item.detail}` : ''}`),
          pending
            ? el('div', { class: 'row' },
              el('button', { type: 'button', 'data-testid': 'allow-once', onclick: () => a.decide(item, 'allow_once') }, 'Allow once'),
              el('button', { type: 'button', class: 'secondary', 'data-testid': 'allow-always', onclick: () => a.decide(item, 'allow_rule') }, 'Always'),
              el('button', { type: 'button', class: 'danger', 'data-testid': 'deny', onclick: () => a.decide(item, 'deny') }, 'Deny'))
            : el('div', { class: 'state', 'data-testid': 'approval-state' }, item.state),
          item.error ? el('p', { class: 'error', role: 'alert', 'data-testid': 'approval-error' }, item.error) : null,
        );
      }
      case 'error':
        return el('div', { class: 'msg error', role: 'alert' }, item.text);
      default:
        return el('div', { class: 'msg' }, JSON.stringify(item));
    }
  }

  renderRun() {
    const id = this.store.activeSessionId;
    const view = id ? this.store.views.get(id) : null;
    const key = `${id}:${view?.run.rev}:${this.store.running}`;
    if (key === this.runKey) return;
    this.runKey = key;
    if (!view) {
      this.run.replaceChildren(el('p', { class: 'empty' }, 'No session selected.'));
      return;
    }
    const r = view.run;
    const status = this.store.running ? 'running' : r.status;
    this.run.replaceChildren(
      el('p', { 'data-testid': 'run-status' }, `Status: ${status}${r.turn ? ` · turn ${r.turn}` : ''}${r.summary ? ` · ${r.summary}` : ''}`),
      r.other ? el('p', { class: 'empty' }, `${r.other} other run event(s) (checkpoints, skills, logs)`) : null,
      ...r.diffs.map((d) => el('details', { class: 'diff', 'data-testid': 'diff' },
        el('summary', {}, d.file || 'diff',
          d.file ? el('button', { type: 'button', class: 'link', 'data-testid': 'open-diff', onclick: () => this.actions.openDiff(d.file) }, 'Open diff') : null,
          d.file ? el('button', { type: 'button', class: 'link', 'data-testid': 'open-file', onclick: () => this.actions.openPath(d.file) }, 'Open file') : null),
        el('pre', {}, d.unified))),
    );
  }

  renderTasks() {
    const id = this.store.activeSessionId;
    const view = id ? this.store.views.get(id) : null;
    const key = `${id}:${view?.tasksRev}`;
    if (key === this.tasksKey) return;
    this.tasksKey = key;
    if (!view || view.tasks.size === 0) {
      this.tasks.replaceChildren(el('p', { class: 'empty' }, 'No tasks yet.'));
      return;
    }
    const children = new Map();
    for (const t of view.tasks.values()) {
      const parent = t.parent && view.tasks.has(t.parent) ? t.parent : null;
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(t);
    }
    const tree = (parent) => el('ul', {}, (children.get(parent) ?? []).map((t) =>
      el('li', { class: `task ${t.status}` }, `${t.title}${t.status ? ` [${t.status}]` : ''}`, children.has(t.id) ? tree(t.id) : null)));
    this.tasks.replaceChildren(tree(null));
  }

  renderDebug() {
    if (this.debugRev === this.store.debugRev) return;
    this.debugRev = this.store.debugRev;
    this.debugCount.textContent = `(${this.store.debug.length})`;
    this.debug.replaceChildren(...this.store.debug.map((d) =>
      el('li', {}, el('code', {}, d.type), el('pre', {}, JSON.stringify(d.event, null, 2)))));
  }
}
