// The prompt box's `/` menu: the commands the engine offers for the active session (the run
// update's `commands`). Typing `/` at the start of the prompt opens a list filtered by what
// follows; ArrowUp/ArrowDown move, Enter or Tab picks, Escape closes. Picking completes the
// prompt to `/<name> ` (the command's input, if any, is typed after it); a prompt that starts
// with an offered command is sent as that command (`parseCommand`). The prompt box is a
// combobox owning a listbox, as assistive technology expects.

import { el } from './dom.js';

/** `{name, input}` when `text` runs one of `commands` (`/<name> [input]`), else null. */
export function parseCommand(text, commands) {
  const m = /^\/(\S+)(?:\s+([\s\S]*))?$/.exec(text.trim());
  if (!m || !(commands ?? []).some((c) => c.name === m[1])) return null;
  return { name: m[1], input: (m[2] ?? '').trim() };
}

/** The commands whose name matches what follows `/` (prefix matches first). */
export function matching(commands, typed) {
  const q = typed.toLowerCase();
  const list = commands ?? [];
  const prefix = list.filter((c) => c.name.toLowerCase().startsWith(q));
  const inner = list.filter((c) => !c.name.toLowerCase().startsWith(q) && c.name.toLowerCase().includes(q));
  return [...prefix, ...inner];
}

let menus = 0;

export class SlashMenu {
  /** Attaches the menu to the prompt box `input`; the caller places `list` (above it). */
  constructor(input) {
    menus += 1;
    this.input = input;
    this.commands = [];
    this.shown = [];
    this.active = 0;
    this.list = el('ul', { id: `slash-menu-${menus}`, class: 'slash-menu', role: 'listbox', 'aria-label': 'Commands', 'data-testid': 'slash-menu', hidden: true });
    input.setAttribute('role', 'combobox');
    input.setAttribute('aria-autocomplete', 'list');
    input.setAttribute('aria-controls', this.list.id);
    input.setAttribute('aria-expanded', 'false');
    input.addEventListener('input', () => this.update());
    input.addEventListener('blur', () => this.close());
    // Before the prompt box's own Enter (send): a capture listener runs first.
    input.addEventListener('keydown', (e) => this.key(e), { capture: true });
  }

  /** The active session's commands (none: the menu never opens). */
  setCommands(commands) {
    this.commands = commands ?? [];
    if (!this.list.hidden) this.update();
  }

  open() {
    return !this.list.hidden;
  }

  /** Opens, filters or closes the list from what the prompt box holds. */
  update() {
    const m = /^\/(\S*)$/.exec(this.input.value);
    const shown = m ? matching(this.commands, m[1]) : [];
    if (!shown.length) {
      this.close();
      return;
    }
    const keep = this.shown[this.active]?.name;
    this.shown = shown;
    this.active = Math.max(0, shown.findIndex((c) => c.name === keep));
    this.draw();
  }

  draw() {
    this.list.replaceChildren(...this.shown.map((c, i) => el('li', {
      id: `${this.list.id}-${i}`,
      role: 'option',
      class: i === this.active ? 'active' : '',
      'aria-selected': i === this.active ? 'true' : 'false',
      'data-testid': 'slash-option',
      'data-name': c.name,
      // Picked without taking the focus from the prompt box.
      onmousedown: (e) => {
        e.preventDefault();
        this.pick(i);
      },
    }, el('strong', {}, `/${c.name}`), c.hint ? el('span', { class: 'muted' }, ` ${c.hint}`) : null, c.description ? el('small', {}, ` — ${c.description}`) : null)));
    this.list.hidden = false;
    this.input.setAttribute('aria-expanded', 'true');
    this.input.setAttribute('aria-activedescendant', `${this.list.id}-${this.active}`);
    this.list.children[this.active]?.scrollIntoView({ block: 'nearest' });
  }

  close() {
    if (this.list.hidden) return;
    this.list.hidden = true;
    this.list.replaceChildren();
    this.shown = [];
    this.input.setAttribute('aria-expanded', 'false');
    this.input.removeAttribute('aria-activedescendant');
  }

  pick(i) {
    const c = this.shown[i];
    if (!c) return;
    this.input.value = `/${c.name} `;
    this.close();
    this.input.focus();
    this.input.setSelectionRange(this.input.value.length, this.input.value.length);
  }

  key(e) {
    if (this.list.hidden || e.isComposing) return;
    const moves = { ArrowDown: 1, ArrowUp: -1 };
    if (e.key in moves) {
      this.active = (this.active + moves[e.key] + this.shown.length) % this.shown.length;
      this.draw();
    } else if (e.key === 'Enter' || e.key === 'Tab') {
      this.pick(this.active);
    } else if (e.key === 'Escape') {
      this.close();
    } else {
      return;
    }
    e.preventDefault();
    e.stopImmediatePropagation();
  }
}
