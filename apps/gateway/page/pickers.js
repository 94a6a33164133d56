// The session's settings bar above the composer: a picker per setting the engine lets a
// person choose (the run update's `configOptions`: model, mode, …; a select, or a checkbox for
// a boolean), the current value selected, and the context window use and cost (`usage`).
// Shown only when the engine offers them. A choice goes to the bridge (`config.set`), which
// applies it and remembers it for the workspace; the update it causes moves the picker.

import { el } from './dom.js';

/** Model and mode first, then the other settings in the engine's order. */
const RANK = { model: 0, mode: 1 };

const compact = (n) => (n >= 1000 ? `${(n / 1000).toFixed(n >= 10_000 ? 0 : 1)}k` : String(n));

/** The context window use and cost in words, or '' when the engine said nothing. */
export function usageWords(usage) {
  if (!usage) return '';
  const parts = [];
  if (Number.isFinite(usage.used) && Number.isFinite(usage.size) && usage.size > 0) {
    parts.push(`${compact(usage.used)} / ${compact(usage.size)} tokens (${Math.round((100 * usage.used) / usage.size)} %)`);
  } else if (Number.isFinite(usage.used)) {
    parts.push(`${compact(usage.used)} tokens`);
  }
  if (usage.cost) parts.push(`${Number(usage.cost.amount).toFixed(2)} ${usage.cost.currency}`);
  return parts.join(' · ');
}

export class Pickers {
  /** `set(configId, value)` applies a choice and resolves once the bridge answered. */
  constructor(set) {
    this.set = set;
    this.node = el('div', { class: 'pickers', role: 'group', 'aria-label': 'Session settings', 'data-testid': 'pickers', hidden: true });
    this.key = null;
    this.busy = new Set();
  }

  /** Shows the settings of `run` (the active session's run update; null for none). */
  render(sessionId, run) {
    const options = [...(run?.configOptions ?? [])].sort((a, b) => (RANK[a.category] ?? 9) - (RANK[b.category] ?? 9));
    const usage = usageWords(run?.usage);
    const mode = run?.mode && !options.some((o) => o.category === 'mode') ? run.mode : null;
    const key = JSON.stringify([sessionId, options, usage, mode, [...this.busy]]);
    if (key === this.key) return;
    this.key = key;
    this.node.hidden = !sessionId || (!options.length && !usage && !mode);
    if (this.node.hidden) {
      this.node.replaceChildren();
      return;
    }
    this.node.replaceChildren(...[
      ...options.map((o) => this.picker(sessionId, o)),
      mode ? el('span', { class: 'mode', 'data-testid': 'mode' }, `Mode: ${mode}`) : null,
      usage ? el('span', { class: 'usage', 'data-testid': 'usage', title: 'Context window use and cost' }, usage) : null,
    ].filter(Boolean));
  }

  picker(sessionId, o) {
    const busy = this.busy.has(o.id);
    const label = el('span', {}, o.name);
    if (o.kind === 'boolean') {
      const box = el('input', { type: 'checkbox', checked: Boolean(o.on), disabled: busy, title: o.description ?? null, 'data-testid': 'picker', 'data-config-id': o.id });
      box.addEventListener('change', () => this.choose(sessionId, o.id, box.checked));
      return el('label', { class: 'picker' }, box, label);
    }
    const groups = new Map();
    for (const c of o.options ?? []) {
      const g = c.group ?? '';
      if (!groups.has(g)) groups.set(g, []);
      groups.get(g).push(el('option', { value: c.value, title: c.description ?? null, selected: c.value === o.value }, c.name));
    }
    const children = [...groups].flatMap(([g, list]) => (g ? [el('optgroup', { label: g }, list)] : list));
    const select = el('select', { disabled: busy, title: o.description ?? null, 'aria-label': o.name, 'data-testid': 'picker', 'data-config-id': o.id, 'data-category': o.category ?? null }, children);
    select.value = o.value ?? '';
    select.addEventListener('change', () => this.choose(sessionId, o.id, select.value));
    return el('label', { class: 'picker' }, label, select);
  }

  async choose(sessionId, configId, value) {
    this.busy.add(configId);
    this.key = null;
    try {
      await this.set(sessionId, configId, value);
    } finally {
      this.busy.delete(configId);
      // Drawn again from the run update: the value the engine took (the old one after a refusal).
      this.key = null;
    }
  }
}
