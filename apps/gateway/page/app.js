// The sidebar page: wires the transport, the store and the view. Configuration comes from
// window.__APP_CONFIG__: { wsUrl, authToken, settings } injected by the gateway, or
// { transport: "vscode", settings } injected by the VS Code extension. The page asks the
// bridge for view-model updates (`bb.init({receive: 'updates'})`) and renders those only.

import { connectTransport } from './rpc.js';
import { folderParams, offerFolders } from './folders.js';
import { answersOf, chosenOf, forgetTyped } from './questions.js';
import { parseCommand } from './slash.js';
import { addNotice, addPrompt, applyMessage, applyUpdate, chat, createStore, dropPrompt, prependHistory, promptFailed, promptSent } from './store.js';
import { View } from './view.js';

const config = window.__APP_CONFIG__ ?? {};
const store = createStore();
store.engineLabel = config.settings?.engineLabel ?? null;
store.deleting = new Map();
// Sessions whose tab this page closed: nothing of them is shown until one is opened again.
store.closed = new Set();
let storage = null;
const saved = (key, fallback) => storage.get(key, fallback);
const save = (key, value) => storage.set(key, value);
const newId = () => (globalThis.crypto?.randomUUID ? crypto.randomUUID() : `id-${Date.now()}-${Math.random()}`);
const UNDO_MS = 5000;

// This tab's identity survives reloads (sessionStorage per browser tab; the webview's state
// in VS Code, across a recreated webview and a window reload), so the bridge can hand a
// reloaded page its tab again. `lastSeen` is what this page *holds* (per tab, the last
// delivery index applied): after a reload it holds nothing, so it asks from 0 and the
// bridge replays the tab (or resyncs it); after a dropped connection it asks only for what
// it missed.
let tabId = null;
const lastSeen = {};

const refresh = () => view.schedule();
const said = (err) => `${err.message}${err.code && !err.message.includes(err.code) ? ` (${err.code})` : ''}`;
const failure = (err) => {
  addNotice(store, 'error', said(err));
  refresh();
};

/** Fetches a whole body the bridge kept aside (`body.get`, paged). */
async function fetchBody(sessionId, ref) {
  let text = '';
  let offset = 0;
  for (;;) {
    const res = await rpc.request('bb.command', { sessionId, command: 'body.get', args: { ref, offset } });
    const page = res.output ?? {};
    text += page.text ?? '';
    if (page.nextOffset == null) return text;
    offset = page.nextOffset;
  }
}

async function fetchOversized(sessionId, refs) {
  for (const ref of refs) {
    try {
      applyUpdate(chat(store, sessionId), JSON.parse(await fetchBody(sessionId, ref)));
    } catch (err) {
      addNotice(store, 'error', `Part of this session could not be loaded: ${said(err)}`);
    }
  }
  refresh();
}

const actions = {
  async createSession() {
    try {
      const session = await rpc.request('bb.createSession', { tabId, ...folderParams() });
      await actions.select(session.sessionId);
    } catch (err) {
      failure(err);
    }
  },
  async select(sessionId) {
    store.closed.delete(sessionId);
    store.activeSessionId = sessionId;
    save('bb.activeSessionId', sessionId);
    refresh();
    try {
      await rpc.request('bb.selectSession', { sessionId, tabId });
    } catch (err) {
      failure(err);
    }
  },
  remove(sessionId) {
    // Deleted after a few seconds unless undone.
    const timer = setTimeout(async () => {
      store.deleting.delete(sessionId);
      try {
        await rpc.request('bb.deleteSession', { sessionId });
        store.chats.delete(sessionId);
        if (store.activeSessionId === sessionId) store.activeSessionId = null;
      } catch (err) {
        failure(err);
      }
      refresh();
    }, UNDO_MS);
    store.deleting.set(sessionId, timer);
    if (store.activeSessionId === sessionId) store.activeSessionId = null;
    refresh();
  },
  undoDelete(sessionId) {
    clearTimeout(store.deleting.get(sessionId));
    store.deleting.delete(sessionId);
    refresh();
  },
  async send(text) {
    const sessionId = store.activeSessionId;
    if (!sessionId) return;
    const messageId = newId();
    // `/<name> [input]` of a command the engine offers runs that command.
    const command = parseCommand(text, chat(store, sessionId).run?.commands);
    addPrompt(store, sessionId, messageId, text);
    refresh();
    try {
      if (command) {
        const line = command.input ? `/${command.name} ${command.input}` : `/${command.name}`;
        await rpc.request('bb.command', { sessionId, command: line });
        promptSent(store, sessionId, messageId);
        refresh();
      } else {
        await rpc.request('bb.sendMessage', { sessionId, text, messageId });
      }
    } catch (err) {
      // The text goes back to the composer, the bubble says why.
      promptFailed(store, sessionId, messageId, said(err));
      view.restore(text);
      setTimeout(() => {
        dropPrompt(store, sessionId, messageId);
        refresh();
      }, UNDO_MS);
      refresh();
    }
  },
  async openDiff(filePath) {
    try {
      await rpc.request('bb.openDiff', { sessionId: store.activeSessionId, filePath });
    } catch (err) {
      failure(err);
    }
  },
  async openPath(path) {
    try {
      await rpc.request('shell.openPath', { path });
    } catch (err) {
      failure(err);
    }
  },
  async stop() {
    const sessionId = store.activeSessionId;
    if (!sessionId) return;
    try {
      await rpc.request('bb.stop', { sessionId });
    } catch (err) {
      failure(err);
    }
  },
  async decide(block, decision) {
    const sessionId = store.activeSessionId;
    block.local = { sent: decision };
    refresh();
    try {
      // A sub-agent's prompt shown here names its own session: the answer goes there. The
      // card's event names which request it shows (a later one may reuse the request id).
      const card = block.eventId ? { eventId: block.eventId } : {};
      await rpc.request('bb.approvePermission', { sessionId: block.sessionId ?? sessionId, requestId: block.permissionId, decision, ...card });
    } catch (err) {
      if (err.code === 'permission_not_pending') {
        // Another window answered first: the bridge's update resolves the card, saying how.
        block.local = null;
      } else {
        block.local = {
          error: err.code === 'workspace_untrusted'
            ? (config.transport === 'vscode'
              ? 'Not allowed yet: this workspace is in Restricted Mode, so the agent may not write files or run commands. Trust the workspace (Manage Workspace Trust), then allow it here; no reload needed.'
              : 'Not allowed: this workspace is not trusted, so the agent may not write files or run commands. Trust the workspace (or start the bridge with --trusted) to allow it.')
            : said(err),
        };
      }
    }
    chat(store, sessionId).rev += 1;
    refresh();
  },
  choose(block, question, value, multiple) {
    const chosen = { ...chosenOf(block) };
    const now = chosen[question] ?? [];
    chosen[question] = now.includes(value) ? now.filter((v) => v !== value) : multiple ? [...now, value] : [value];
    block.local = { ...block.local, chosen, error: null };
    chat(store, store.activeSessionId).rev += 1;
    refresh();
  },
  async answer(block) {
    const sessionId = store.activeSessionId;
    const chosen = chosenOf(block);
    const { answers, error } = answersOf(block);
    if (error) {
      block.local = { ...block.local, error };
    } else {
      block.local = { sent: 'answer' };
      try {
        const args = { requestId: block.permissionId, ...(answers === null ? {} : { answers }) };
        await rpc.request('bb.command', { sessionId: block.sessionId ?? sessionId, command: 'question.reply', args });
        forgetTyped(block);
      } catch (err) {
        block.local = { chosen, error: said(err) };
      }
    }
    chat(store, sessionId).rev += 1;
    refresh();
  },
  async dismissQuestion(block) {
    const sessionId = store.activeSessionId;
    block.local = { sent: 'dismiss' };
    try {
      await rpc.request('bb.command', { sessionId: block.sessionId ?? sessionId, command: 'question.reject', args: { requestId: block.permissionId } });
    } catch (err) {
      block.local = { error: said(err) };
    }
    chat(store, sessionId).rev += 1;
    refresh();
  },
  async showFull(block, ref) {
    const sessionId = store.activeSessionId;
    try {
      block.local = { ...block.local, full: await fetchBody(sessionId, ref) };
    } catch (err) {
      block.local = { ...block.local, full: `Could not load it: ${said(err)}` };
    }
    chat(store, sessionId).rev += 1;
    refresh();
  },
  async showEarlier() {
    // The turns a paged resync left out, a page at a time, put above the ones shown; the
    // place being read stays where it is.
    const sessionId = store.activeSessionId;
    const c = chat(store, sessionId);
    if (!c.earlier || c.loadingEarlier) return;
    c.loadingEarlier = true;
    view.render();
    try {
      const page = await rpc.request('bb.history', { sessionId, before: c.earlier.before });
      if (chat(store, sessionId) !== c) return; // resynced meanwhile: its own `earlier` holds
      const fetch = prependHistory(store, sessionId, page);
      const se = document.scrollingElement;
      const fromBottom = se.scrollHeight - se.scrollTop;
      view.render();
      se.scrollTop = se.scrollHeight - fromBottom;
      if (fetch.length) fetchOversized(sessionId, fetch);
    } catch (err) {
      failure(err);
    } finally {
      c.loadingEarlier = false;
      chat(store, sessionId).loadingEarlier = false;
      refresh();
    }
  },
  /** Applies a session setting (model, mode, …); the bridge remembers it for the workspace. */
  async setConfig(sessionId, configId, value) {
    try {
      await rpc.request('bb.command', { sessionId, command: 'config.set', args: { configId, value } });
    } catch (err) {
      failure(err);
    }
    refresh();
  },
  /**
   * Closes the session's tab: the bridge closes the session (an engine without a session
   * close leaves it running) and nothing of it is shown any more; it stays listed and opens
   * again when picked.
   */
  async close(sessionId) {
    store.closed.add(sessionId);
    if (store.activeSessionId === sessionId) {
      store.activeSessionId = null;
      save('bb.activeSessionId', null);
    }
    refresh();
    try {
      await rpc.request('bb.command', { sessionId, command: 'session.close' });
    } catch (err) {
      // The tab is closed all the same; the notice says what the bridge answered.
      failure(err);
    }
  },
  dismiss(id) {
    store.notices = store.notices.filter((n) => n.id !== id);
    store.rev += 1;
    refresh();
  },
};

function onEvent(name, payload) {
  switch (name) {
    case 'bb/state':
      store.stateSeen = true;
      store.sessions = payload.sessions ?? [];
      if (payload.activeSessionId && !store.deleting.has(payload.activeSessionId)) store.activeSessionId = payload.activeSessionId;
      if (store.activeSessionId && !store.sessions.some((s) => s.sessionId === store.activeSessionId)) store.activeSessionId = null;
      store.running = Boolean(payload.running);
      store.pendingPermissionCount = payload.pendingPermissionCount ?? 0;
      break;
    case 'bb/connection':
      store.connection = payload;
      if (payload.gapDetected) {
        addNotice(store, 'gap', 'Some engine events were lost while reconnecting: the conversation may miss steps from that moment.');
      }
      break;
    case 'bb/events': {
      const fetch = store.closed.has(payload.sessionId) ? [] : applyMessage(store, payload);
      if (fetch.length) fetchOversized(payload.sessionId, fetch);
      if (payload.tabId && typeof payload.seq === 'number') {
        const had = lastSeen[payload.tabId] ?? 0;
        if (payload.seq > had + 1 && !payload.resync) {
          addNotice(store, 'gap', 'Some updates never reached this page: reload it to see the whole conversation.');
        }
        lastSeen[payload.tabId] = Math.max(had, payload.seq);
      }
      break;
    }
    default:
  }
  refresh();
}

async function onOpen() {
  try {
    const init = await rpc.request('bb.init', { lastSeen, receive: 'updates' });
    store.engine = init.engine;
    offerFolders(init.folders);
    const { sessions } = await rpc.request('bb.listSessions');
    // `bb/state` (sessions named, statuses in the bridge's words) wins over the engine's list.
    if (!store.stateSeen) store.sessions = sessions;
    const remembered = saved('bb.activeSessionId', null);
    if (remembered && sessions.some((s) => s.sessionId === remembered)) await actions.select(remembered);
  } catch (err) {
    failure(err);
  }
  refresh();
}

const transport = connectTransport(config, {
  onEvent,
  onOpen,
  onStatus(link) {
    store.link = link;
    refresh();
  },
});
const { rpc } = transport;
storage = transport.storage;
tabId = saved('bb.tabId', null) ?? newId();
// The view tells a card another window answered by this tab's id.
store.tabId = tabId;
save('bb.tabId', tabId);
lastSeen[tabId] = 0;
const view = new View(document.getElementById('app'), store, actions);
// In VS Code the extension host reports visibility (the webview's own document may not
// know it is hidden); in a browser the page does.
if (!rpc.hostOwnsVisibility) {
  document.addEventListener('visibilitychange', () => {
    rpc.request('bb.visibility', { visible: !document.hidden }).catch(() => {});
  });
}
// For diagnostics from the devtools console (and the browser test): the page's own objects.
window.__bb = { rpc, store };
rpc.connect();
view.render();
