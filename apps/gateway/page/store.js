// The page's state and the reducers that fold gateway events into it. Rendering is
// separate (view.js) and batched: reducers only mark what changed.

const DEBUG_CAP = 200;
const PREVIEW_CHARS = 600;

// Event type → class (the bridge sends `class` itself when it knows it; this is the fallback).
const TYPE_CLASS = {
  user_message: 'transcript.user_message',
  'assistant.message.start': 'transcript.assistant_stream',
  'assistant.message.delta': 'transcript.assistant_stream',
  'assistant.message.end': 'transcript.assistant_stream',
  assistant_message: 'transcript.assistant_stream',
  assistant_delta: 'transcript.assistant_stream',
  'message.part.delta': 'transcript.assistant_stream',
  'message.part.updated': 'transcript.assistant_stream',
  'message.updated': 'transcript.assistant_stream',
  'assistant.reasoning.delta': 'transcript.reasoning_stream',
  'assistant.thought_summary.delta': 'transcript.reasoning_stream',
  tool_call: 'tool.call',
  'tool.exec.start': 'tool.call',
  'tool.exec.stdout.delta': 'tool.output',
  'tool.exec.stderr.delta': 'tool.output',
  tool_result: 'tool.result',
  'tool.result': 'tool.result',
  'tool.exec.end': 'tool.result',
  permission_request: 'permission.request',
  'permission.asked': 'permission.request',
  permission_response: 'permission.response',
  'permission.replied': 'permission.response',
  task_event: 'task.event',
  todo_update: 'task.todo',
  'todo.updated': 'task.todo',
  completion: 'run.finished',
  run_finished: 'run.finished',
  'session.turn.close': 'run.finished',
  turn_start: 'turn.start',
  'session.turn.open': 'turn.start',
  'session.status': 'run.status',
  'session.idle': 'run.status',
  'session.diff': 'run.diff',
  'file.edited': 'run.diff',
  limits_update: 'run.limits',
  error: 'run.error_or_gap',
  warning: 'run.error_or_gap',
  'stream.gap': 'run.error_or_gap',
  'session.error': 'run.error_or_gap',
};

export function classOf(ev) {
  return ev.class ?? TYPE_CLASS[ev.type] ?? 'unknown_event';
}

export function createStore() {
  return {
    link: { state: 'connecting', attempt: 0 },
    engine: null,
    connection: { status: 'connecting' },
    sessions: [],
    activeSessionId: null,
    running: false,
    pendingPermissionCount: 0,
    views: new Map(),
    notices: [],
    debug: [],
    debugRev: 0,
    rev: 0,
  };
}

export function sessionView(store, sessionId) {
  let view = store.views.get(sessionId);
  if (!view) {
    view = { items: [], byKey: new Map(), seen: new Set(), tasks: new Map(), tasksRev: 0, run: { status: 'idle', turn: null, diffs: [], summary: null, rev: 0 }, lastSeen: null, rev: 0 };
    store.views.set(sessionId, view);
  }
  return view;
}

function upsert(view, key, make) {
  let item = view.byKey.get(key);
  if (!item) {
    item = make();
    item.key = key;
    item.rev = 0;
    view.byKey.set(key, item);
    view.items.push(item);
  }
  item.rev += 1;
  view.rev += 1;
  return item;
}

export function addUserMessage(store, sessionId, text, messageId) {
  const view = sessionView(store, sessionId);
  upsert(view, `user:${messageId}`, () => ({ kind: 'user', text }));
}

export function addNotice(store, kind, text) {
  store.notices.push({ id: `${Date.now()}-${store.notices.length}`, kind, text });
  store.rev += 1;
}

function preview(value) {
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  if (text === undefined) return { text: '', cut: false };
  return text.length > PREVIEW_CHARS ? { text: `${text.slice(0, PREVIEW_CHARS)}…`, cut: true, full: text } : { text, cut: false };
}

function textOf(p) {
  return p.delta ?? p.text ?? p.content ?? (typeof p.part?.text === 'string' ? p.part.text : '');
}

function streamKey(ev) {
  const p = ev.payload;
  return p.item_id ?? p.message_id ?? p.messageID ?? p.part?.messageID ?? p.info?.id ?? ev.messageId ?? `turn-${ev.turn ?? 0}`;
}

function toolKey(ev) {
  const p = ev.payload;
  return p.call_id ?? p.callID ?? p.part?.callID ?? p.call?.id ?? p.tool_call_id ?? `${p.tool ?? p.call?.function?.name ?? p.part?.tool ?? 'tool'}#${ev.turn ?? 0}`;
}

/** Applies one `bb/events` batch. */
export function applyEvents(store, payload) {
  const view = sessionView(store, payload.sessionId);
  if (payload.resync) {
    // The bridge could not deliver every event to this page: it starts over from the
    // session's view and says so.
    view.items.length = 0;
    view.byKey.clear();
    view.seen.clear();
    view.tasks.clear();
    view.run = { status: 'idle', turn: null, diffs: [], summary: null, rev: 0 };
    view.rev += 1;
    view.tasksRev += 1;
    fromView(view, payload.view ?? {});
    addNotice(store, 'resync', payload.view?.omitted
      ? 'This page fell behind and the session state was too large to resend: only new events are shown from here on.'
      : 'This page fell behind and was resynchronized from the session state: streamed details before this point are summarized.');
  }
  for (const ev of payload.events ?? []) {
    if (ev.id && view.seen.has(ev.id)) continue;
    if (ev.id) {
      view.seen.add(ev.id);
      view.lastSeen = ev.id;
    }
    applyEvent(store, view, ev);
  }
  view.lastSeq = payload.seq ?? view.lastSeq;
}

/** Rebuilds a session view from the bridge's reduced view model (sent with a resync). */
function fromView(view, model) {
  for (const b of model.transcript?.blocks ?? []) {
    const key = `view:${b.blockId}`;
    switch (b.kind) {
      case 'user':
        upsert(view, key, () => ({ kind: 'user', text: b.text?.text ?? '' }));
        break;
      case 'assistant':
      case 'reasoning':
        upsert(view, key, () => ({ kind: b.kind, text: b.text ?? '', streaming: b.status === 'streaming' }));
        break;
      case 'tool': {
        const out = b.output ? { text: b.output.text, cut: b.output.truncated } : null;
        upsert(view, key, () => ({ kind: 'tool', name: b.tool ?? 'tool', status: b.status, summary: b.summary ?? b.title ?? null, args: b.input ? { text: b.input.text } : null, result: out, ref: b.output?.bodyRef ?? null }));
        break;
      }
      case 'approval': {
        const state = b.state?.state ?? b.state;
        const decision = b.state?.decision ?? b.decision;
        const item = upsert(view, `perm:${b.requestId ?? b.blockId}`, () => ({ kind: 'permission', requestId: b.requestId }));
        item.title = b.approval ?? 'permission';
        item.tool = b.tool ?? '';
        item.detail = b.summary ?? (b.patterns ?? []).join(', ');
        item.state = state === 'pending' ? 'pending' : `answered: ${decision ?? 'done'}`;
        break;
      }
      default:
        upsert(view, key, () => ({ kind: 'error', text: b.text?.text ?? b.text ?? b.message ?? JSON.stringify(b) }));
    }
  }
  const run = model.run ?? {};
  view.run.status = run.state ?? view.run.status;
  view.run.turn = run.turn ?? null;
  view.run.summary = run.summary?.reason ?? null;
  view.run.rev += 1;
}

function applyEvent(store, view, ev) {
  const p = ev.payload ?? {};
  const cls = classOf(ev);
  switch (cls) {
    case 'transcript.user_message': {
      const text = textOf(p);
      // The page already shows what it sent; an echo of the same text is not repeated.
      const last = [...view.items].reverse().find((i) => i.kind === 'user');
      if (last && last.text === text) return;
      upsert(view, `user:${ev.id}`, () => ({ kind: 'user', text }));
      return;
    }
    case 'transcript.assistant_stream':
    case 'transcript.reasoning_stream': {
      const reasoning = cls === 'transcript.reasoning_stream';
      const item = upsert(view, `${reasoning ? 'think' : 'say'}:${streamKey(ev)}`, () => ({ kind: reasoning ? 'reasoning' : 'assistant', text: '', streaming: true }));
      if (ev.type.endsWith('.end')) item.streaming = false;
      else if (ev.type === 'message.part.updated' || ev.type === 'assistant_message') item.text = textOf(p) || item.text;
      else item.text += textOf(p);
      return;
    }
    case 'tool.call': {
      const item = upsert(view, `tool:${toolKey(ev)}`, () => ({ kind: 'tool', status: 'running', output: '' }));
      item.name = p.tool ?? p.call?.function?.name ?? p.part?.tool ?? 'tool';
      item.args = preview(p.call?.function?.arguments ?? p.args ?? p.input ?? p.part?.state?.input ?? '');
      return;
    }
    case 'tool.output': {
      const item = upsert(view, `tool:${toolKey(ev)}`, () => ({ kind: 'tool', name: p.tool ?? 'tool', status: 'running', output: '' }));
      item.output += textOf(p);
      item.result = preview(item.output);
      return;
    }
    case 'tool.result': {
      const item = upsert(view, `tool:${toolKey(ev)}`, () => ({ kind: 'tool', name: p.tool ?? 'tool', output: '' }));
      item.name = item.name ?? p.tool;
      item.status = p.error || p.success === false ? 'failed' : 'done';
      item.summary = p.display?.summary ?? p.display?.title ?? null;
      item.result = preview(p.result ?? p.output ?? p.part?.state?.output ?? p);
      item.ref = ev.truncated?.ref ?? null;
      for (const block of p.display?.diff_blocks ?? []) {
        view.run.diffs.push({ file: block.filePath ?? block.file ?? '', unified: block.unified ?? '' });
        view.run.rev += 1;
      }
      return;
    }
    case 'permission.request': {
      const requestId = p.request_id ?? p.requestId ?? p.id ?? ev.id;
      const item = upsert(view, `perm:${requestId}`, () => ({ kind: 'permission', requestId, state: 'pending' }));
      const first = p.items?.[0] ?? {};
      item.title = p.permission ?? first.category ?? 'permission';
      item.detail = first.metadata?.path ?? p.pattern ?? first.pattern ?? (p.patterns ?? []).join(', ');
      item.tool = first.pattern ?? p.tool ?? p.metadata?.tool ?? '';
      return;
    }
    case 'permission.response': {
      const requestId = p.request_id ?? p.requestId ?? p.requestID ?? p.id;
      const item = view.byKey.get(`perm:${requestId}`);
      // The bridge's own resolution names who answered (the first answer wins); the
      // engine's later event for the same answer does not overwrite it.
      if (item && !item.answeredBy) {
        item.state = `answered: ${p.decision ?? p.reply ?? p.response ?? 'done'}`;
        if (p.answeredBy) {
          item.answeredBy = p.answeredBy;
          const where = p.answeredBy.tabId ? `tab ${p.answeredBy.tabId}` : `connection ${p.answeredBy.connection}`;
          item.state += ` (from ${where})`;
        }
        item.rev += 1;
        view.rev += 1;
      }
      return;
    }
    case 'task.event':
    case 'task.todo': {
      const list = p.todos ?? p.tasks ?? (p.task ? [p.task] : [p]);
      for (const [i, t] of list.entries()) {
        const id = t.id ?? t.task_id ?? t.taskId ?? `${cls}-${i}`;
        view.tasks.set(id, { id, parent: t.parent_id ?? t.parentId ?? null, title: t.content ?? t.title ?? t.description ?? id, status: t.status ?? '' });
      }
      view.tasksRev += 1;
      return;
    }
    case 'turn.start':
      view.run.status = 'running';
      view.run.turn = p.turn ?? ev.turn ?? view.run.turn;
      view.run.rev += 1;
      return;
    case 'run.status':
      view.run.status = p.status?.type ?? p.status ?? view.run.status;
      view.run.rev += 1;
      return;
    case 'run.diff':
      view.run.diffs.push({ file: p.file ?? p.path ?? '', unified: typeof p.diff === 'string' ? p.diff : JSON.stringify(p.diff ?? p, null, 2) });
      view.run.rev += 1;
      return;
    case 'run.finished':
      view.run.summary = p.summary?.reason ?? p.reason ?? null;
      view.run.status = /stop|cancel|interrupt/.test(view.run.summary ?? '') ? 'stopped' : 'finished';
      view.run.rev += 1;
      for (const item of view.items) {
        if (item.streaming) {
          item.streaming = false;
          item.rev += 1;
        }
      }
      view.rev += 1;
      return;
    case 'run.error_or_gap': {
      const text = p.message ?? p.error ?? p.detail ?? ev.type;
      upsert(view, `err:${ev.id}`, () => ({ kind: 'error', text: typeof text === 'string' ? text : JSON.stringify(text) }));
      return;
    }
    case 'run.limits':
    case 'session.info':
    case 'connection':
      view.run.info = `${ev.type}`;
      return;
    case 'unknown_event':
      store.debug.push({ type: ev.type, cls, event: ev });
      if (store.debug.length > DEBUG_CAP) store.debug.shift();
      store.debugRev += 1;
      return;
    default:
      // Known classes this page has no lane for (checkpoints, skills, rewards, log links):
      // counted in the run lane.
      view.run.other = (view.run.other ?? 0) + 1;
      view.run.rev += 1;
  }
}
