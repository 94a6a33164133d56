// A question card's questions as one form, answered all at once. A question offers options
// (buttons, several when `multiple`) or, a form field without options, an input of its type
// (`input`: text, number, integer, boolean). When the questions name form fields (`field`, an
// agent's form), the answer is one object of each field's value; otherwise one list of the
// chosen options per question. What is typed is kept per card until it is answered, so a
// card drawn again (an option chosen) keeps it.

import { el } from './dom.js';

const typedOf = new WeakMap();

/** The values typed into `block`'s inputs, by question index. */
function typed(block) {
  let t = typedOf.get(block);
  if (!t) {
    t = {};
    (block.questions ?? []).forEach((q, i) => {
      if (q.input && q.default != null) t[i] = q.input === 'boolean' ? q.default === 'true' : q.default;
    });
    typedOf.set(block, t);
  }
  return t;
}

/** Records what was typed into `block`'s question `qi` (an input's listener). */
export function setTyped(block, qi, value) {
  typed(block)[qi] = value;
}

/** The options chosen so far (the person's choices, else the questions' defaults). */
export function chosenOf(block) {
  if (block.local?.chosen) return block.local.chosen;
  const chosen = {};
  (block.questions ?? []).forEach((q, i) => {
    if (q.options?.length && q.default != null) chosen[i] = [q.default];
  });
  return chosen;
}

const title = (b, q) => (q.question === b.prompt ? (q.header ?? '') : q.header ? `${q.header}: ${q.question}` : q.question);

/** The open card's form: a fieldset per question. `choose(qi, value, multiple)` picks an option. */
export function questionForm(b, choose) {
  const chosen = chosenOf(b);
  const values = typed(b);
  return (b.questions ?? []).map((q, qi) => {
    const legend = el('legend', {}, title(b, q), q.required ? el('span', { class: 'muted', 'aria-hidden': 'true' }, ' *') : null);
    if (q.options?.length) {
      return el('fieldset', { class: 'question', 'data-testid': 'question', 'data-field': q.field ?? null, 'aria-required': q.required ? 'true' : null },
        legend,
        q.options.map((o) => {
          const on = (chosen[qi] ?? []).includes(o.value);
          return el('button', { type: 'button', class: on ? '' : 'secondary', 'aria-pressed': on ? 'true' : 'false', title: o.description ?? null, 'data-testid': 'approval-option', 'data-value': o.value, onclick: () => choose(qi, o.value, q.multiple) }, o.label);
        }));
    }
    const id = `q-${b.key}-${qi}`;
    let input;
    if (q.input === 'boolean') {
      input = el('input', { id, type: 'checkbox', checked: Boolean(values[qi]), 'data-testid': 'question-input', 'data-field': q.field ?? null });
      input.addEventListener('change', () => setTyped(b, qi, input.checked));
    } else {
      const numeric = q.input === 'number' || q.input === 'integer';
      input = el('input', { id, type: numeric ? 'number' : 'text', step: q.input === 'integer' ? '1' : numeric ? 'any' : null, required: q.required, 'aria-required': q.required ? 'true' : null, 'data-testid': 'question-input', 'data-field': q.field ?? null });
      input.value = values[qi] ?? '';
      input.addEventListener('input', () => setTyped(b, qi, input.value));
    }
    return el('fieldset', { class: 'question field', 'data-testid': 'question' }, legend, el('label', { for: id, class: 'visually-hidden' }, title(b, q) || q.field || 'Answer'), input);
  });
}

/**
 * The card's answer: `{answers}` to send, or `{error}` saying what is missing. Form fields:
 * `{field: value}` (optional fields left empty are left out); otherwise a list of chosen
 * options per question, each needing one.
 */
export function answersOf(b) {
  const chosen = chosenOf(b);
  const values = typed(b);
  const questions = b.questions ?? [];
  // Nothing to fill in (an agent's link to follow, say): the reply says it was done.
  if (!questions.length) return { answers: null };
  if (!questions.some((q) => q.field)) {
    const answers = questions.map((_, i) => chosen[i] ?? []);
    return answers.some((a) => !a.length) ? { error: 'Pick an answer for each question first.' } : { answers };
  }
  const answers = {};
  const missing = [];
  questions.forEach((q, i) => {
    let value;
    if (q.options?.length) {
      const picked = chosen[i] ?? [];
      value = q.multiple ? (picked.length ? picked : undefined) : picked[0];
    } else if (q.input === 'boolean') {
      value = Boolean(values[i]);
    } else {
      const text = String(values[i] ?? '').trim();
      if (text === '') value = undefined;
      else if (q.input === 'number' || q.input === 'integer') {
        value = Number(text);
        if (!Number.isFinite(value) || (q.input === 'integer' && !Number.isInteger(value))) {
          missing.push(`${q.question} (a ${q.input === 'integer' ? 'whole ' : ''}number)`);
          return;
        }
      } else value = text;
    }
    if (value === undefined) {
      if (q.required) missing.push(q.question);
      return;
    }
    answers[q.field ?? String(i)] = value;
  });
  return missing.length ? { error: `Fill in ${missing.join(', ')} first.` } : { answers };
}

/** Forgets what was typed into a card (it was answered). */
export function forgetTyped(b) {
  typedOf.delete(b);
}
