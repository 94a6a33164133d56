// The page's prompt-box commands, question forms and settings words
// (apps/gateway/page/{slash,questions,pickers}.js), without a browser: `node --test`.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { usageWords } from '../../page/pickers.js';
import { answersOf, setTyped } from '../../page/questions.js';
import { matching, parseCommand } from '../../page/slash.js';

const commands = [{ name: 'review', hint: 'what to review' }, { name: 'init' }, { name: 'preview' }];

test('a prompt runs a command only when it names one the engine offers', () => {
  assert.deepEqual(parseCommand('/review the diff ', commands), { name: 'review', input: 'the diff' });
  assert.deepEqual(parseCommand('/init', commands), { name: 'init', input: '' });
  assert.equal(parseCommand('/unknown x', commands), null);
  assert.equal(parseCommand('please /init', commands), null);
  assert.equal(parseCommand('/init', undefined), null);
  // Prefix matches first, then names containing what was typed.
  assert.deepEqual(matching(commands, 're').map((c) => c.name), ['review', 'preview']);
  assert.deepEqual(matching(commands, '').map((c) => c.name), ['review', 'init', 'preview']);
  assert.deepEqual(matching(commands, 'x'), []);
});

test('a form is answered as one object of typed field values; required fields are asked for', () => {
  const card = {
    key: 'b1',
    questions: [
      { question: 'name', field: 'name', input: 'text', options: [], required: true },
      { question: 'color', field: 'color', options: [{ label: 'red', value: 'red' }, { label: 'blue', value: 'blue' }] },
      { question: 'age', field: 'age', input: 'integer', options: [] },
      { question: 'tags', field: 'tags', multiple: true, options: [{ label: 'a', value: 'a' }, { label: 'b', value: 'b' }] },
      { question: 'ok', field: 'ok', input: 'boolean', options: [], default: 'true' },
    ],
  };
  assert.deepEqual(answersOf(card), { error: 'Fill in name first.' });
  const filled = { ...card, key: 'b2', local: { chosen: { 1: ['blue'], 3: ['a', 'b'] } } };
  setTyped(filled, 0, ' Ada ');
  setTyped(filled, 2, '36');
  assert.deepEqual(answersOf(filled), { answers: { name: 'Ada', color: 'blue', age: 36, tags: ['a', 'b'], ok: true } });
  setTyped(filled, 2, '3.5');
  assert.deepEqual(answersOf(filled), { error: 'Fill in age (a whole number) first.' });
});

test('a form with only options and defaults answers without typing', () => {
  const card = {
    key: 'b3',
    questions: [
      { question: 'color', field: 'color', required: true, default: 'red', options: [{ label: 'red', value: 'red' }] },
      { question: 'ok', field: 'ok', input: 'boolean', options: [], default: 'false' },
      { question: 'note', field: 'note', input: 'text', options: [] },
    ],
  };
  assert.deepEqual(answersOf(card), { answers: { color: 'red', ok: false } });
});

test('questions without fields are answered as one list of labels per question', () => {
  const card = { key: 'b4', questions: [{ question: 'a?', options: [{ label: 'x', value: 'x' }] }, { question: 'b?', options: [{ label: 'y', value: 'y' }] }] };
  assert.deepEqual(answersOf(card), { error: 'Pick an answer for each question first.' });
  assert.deepEqual(answersOf({ ...card, local: { chosen: { 0: ['x'], 1: ['y'] } } }), { answers: [['x'], ['y']] });
  assert.deepEqual(answersOf({ key: 'b5', questions: [] }), { answers: null });
});

test('usage reads as tokens of the window and cost', () => {
  assert.equal(usageWords({ used: 1200, size: 64000, cost: { amount: 0.25, currency: 'USD' } }), '1.2k / 64k tokens (2 %) · 0.25 USD');
  assert.equal(usageWords({ used: 800 }), '800 tokens');
  assert.equal(usageWords(null), '');
});
