// The sidebar page: wires the transport, the store and the view. Configuration comes from
// window.__APP_CONFIG__: { wsUrl, authToken, settings } injected by the gateway, or
// { transport: "vscode", settings } injected by the VS Code extension.

import { connectTransport } from './rpc.js';
import { addNotice, addUserMessage, applyEvents, createStore, sessionView } from './store.js';
import { View } from './view.js';

const config = window.__APP_CONFIG__ ?? {};
const store = createStore();
let storage = null;
const saved = (key, fallback) => storage.get(key, fallback);
const save = (key, value) => storage.set(key, value);
const newId = () => (globalThis.crypto?.randomUUID ? crypto.randomUUID() : `id-${Date.now()}-${Math.random()}`);

// This tab's identity survives reloads (sessionStorage per browser tab; the webview's state
// in VS Code, across a recreated webview and a window reload), so the bridge can hand a
// reloaded page its tab again. `lastSeen` is what this page *holds* (per tab, the last
// delivery index applied): after a reload it holds nothing, so it asks from 0 and the
// bridge replays the tab (or resyncs it from the session's view); after a dropped
// connection it asks only for what it missed.
let tabId = null;
const lastSeen = {};

const refresh = () => view.schedule();
const failure = (sessionId, err) => {
  if (!sessionId) {
    addNotice(store, 'error', err.message);
  } else {
    const v = sessionView(store, sessionId);
    v.items.push({ kind: 'error', key: `req:${newId()}`, rev: 1, text: `${err.message}${err.code ? ` (${err.code})` : ''}` });
    v.rev += 1;
  }
  refresh();
};

const actions = {
  async createSession() {
    try {
      const session = await rpc.request('bb.createSession', { tabId });
      await actions.select(session.sessionId);
    } catch (err) {
      failure(null, err);
    }
  },
  async select(sessionId) {
    store.activeSessionId = sessionId;
    save('bb.activeSessionId', sessionId);
    refresh();
    try {
      await rpc.request('bb.selectSession', { sessionId, tabId });
    } catch (err) {
      failure(null, err);
    }
  },
  async remove(sessionId) {
    try {
      await rpc.request('bb.deleteSession', { sessionId });
      store.views.delete(sessionId);
      if (store.activeSessionId === sessionId) store.activeSessionId = null;
      refresh();
    } catch (err) {
      failure(null, err);
    }
  },
  // Resolves `true` when the bridge took the message; on `false` the composer gets the text
  // back.
  async send(text) {
    const sessionId = store.activeSessionId;
    if (!sessionId) return false;
    const messageId = newId();
    addUserMessage(store, sessionId, text, messageId);
    refresh();
    try {
      await rpc.request('bb.sendMessage', { sessionId, text, messageId });
      return true;
    } catch (err) {
      failure(sessionId, err);
      return false;
    }
  },
  async openDiff(filePath) {
    const sessionId = store.activeSessionId;
    try {
      await rpc.request('bb.openDiff', { sessionId, filePath });
    } catch (err) {
      failure(sessionId, err);
    }
  },
  async openPath(path) {
    try {
      await rpc.request('shell.openPath', { path });
    } catch (err) {
      failure(store.activeSessionId, err);
    }
  },
  async stop() {
    const sessionId = store.activeSessionId;
    if (!sessionId) return;
    try {
      await rpc.request('bb.stop', { sessionId });
    } catch (err) {
      failure(sessionId, err);
    }
  },
  async decide(item, decision) {
    const sessionId = store.activeSessionId;
    item.error = null;
    try {
      await rpc.request('bb.approvePermission', { sessionId, requestId: item.requestId, decision });
      item.state = `answered: ${decision.replace('_', ' ')}`;
    } catch (err) {
      // Another window answered first: the card resolves (its own event names who).
      if (err.code === 'permission_not_pending') {
        if (item.state === 'pending') item.state = 'answered elsewhere';
        item.rev += 1;
        sessionView(store, sessionId).rev += 1;
        refresh();
        return;
      }
      item.error = err.code === 'workspace_untrusted'
        ? (config.transport === 'vscode'
          ? 'Not allowed yet: this workspace is in Restricted Mode, so the agent may not write files or run commands. Trust the workspace (Manage Workspace Trust), then allow it here; no reload needed.'
          : 'Refused: this workspace is not trusted, so the agent may not write files or run commands. Restart the gateway with --trusted (or trust the workspace in your IDE) to allow it.')
        : `${err.message}${err.code ? ` (${err.code})` : ''}`;
    }
    item.rev += 1;
    sessionView(store, sessionId).rev += 1;
    refresh();
  },
  async showFull(item) {
    const sessionId = store.activeSessionId;
    if (!item.ref) {
      item.fullOutput = item.result?.full ?? item.result?.text ?? '';
    } else {
      try {
        const res = await rpc.request('bb.command', { sessionId, command: 'body.get', args: { ref: item.ref } });
        item.fullOutput = typeof res.output === 'string' ? res.output : JSON.stringify(res.output, null, 2);
      } catch (err) {
        item.fullOutput = `Could not fetch the full output: ${err.message}`;
      }
    }
    item.rev += 1;
    sessionView(store, sessionId).rev += 1;
    refresh();
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
      store.sessions = payload.sessions ?? [];
      if (payload.activeSessionId) store.activeSessionId = payload.activeSessionId;
      if (store.activeSessionId && !store.sessions.some((s) => s.sessionId === store.activeSessionId)) store.activeSessionId = null;
      store.running = Boolean(payload.running);
      store.pendingPermissionCount = payload.pendingPermissionCount ?? 0;
      break;
    case 'bb/connection':
      store.connection = payload;
      if (payload.gapDetected) {
        addNotice(store, 'gap', 'Some engine events were lost while reconnecting: the transcript may miss steps from that moment.');
      }
      break;
    case 'bb/events':
      applyEvents(store, payload);
      if (payload.tabId && typeof payload.seq === 'number') {
        const had = lastSeen[payload.tabId] ?? 0;
        if (payload.seq > had + 1 && !payload.resync) {
          addNotice(store, 'gap', `Delivery gap: messages ${had + 1}–${payload.seq - 1} for this tab never arrived; reload to resynchronize.`);
        }
        lastSeen[payload.tabId] = Math.max(had, payload.seq);
      }
      break;
    default:
      store.debug.push({ type: name, cls: 'event', event: payload });
      store.debugRev += 1;
  }
  refresh();
}

async function onOpen() {
  try {
    const init = await rpc.request('bb.init', { lastSeen });
    store.engine = init.engine;
    const { sessions } = await rpc.request('bb.listSessions');
    store.sessions = sessions;
    const remembered = saved('bb.activeSessionId', null);
    if (remembered && sessions.some((s) => s.sessionId === remembered)) await actions.select(remembered);
  } catch (err) {
    failure(null, err);
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
