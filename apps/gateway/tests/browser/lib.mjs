// What the browser tests share: Debian's Chromium through playwright-core, numbered
// screenshots, checks that say what was expected, and the page as a person uses it.

import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';

export const T = 30_000;

export async function launch() {
  return chromium.launch({
    executablePath: process.env.BB_CHROMIUM ?? '/usr/bin/chromium',
    args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Numbered full-page screenshots under `dir`, one line printed per step. */
export function shots(dir) {
  mkdirSync(dir, { recursive: true });
  let n = 0;
  return async (page, name) => {
    n += 1;
    const path = `${dir}/${String(n).padStart(2, '0')}-${name}.png`;
    await page.screenshot({ path, fullPage: true });
    console.log(`ok ${n} ${name} (${path})`);
  };
}

export function expect(cond, what) {
  if (!cond) throw new Error(`expected: ${what}`);
}

/** Collects a page's errors, CSP violations and failed loads. */
export async function watch(page, label, errors) {
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`${label}: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`${label}: ${e.message}`));
  page.on('response', (r) => {
    if (r.status() >= 400 && r.status() !== 403) errors.push(`${label}: HTTP ${r.status()} for ${r.url().replace(/token=[^&]*/, 'token=…')}`);
  });
  await page.exposeFunction('__cspViolation', (v) => errors.push(`${label}: CSP ${v}`));
  await page.addInitScript(() => document.addEventListener('securitypolicyviolation', (e) => window.__cspViolation(`${e.violatedDirective} ${e.blockedURI}`)));
}

/** The page as a person sees and uses it. */
export class Person {
  constructor(page) {
    this.page = page;
  }

  by(id) {
    return this.page.getByTestId(id);
  }

  async newSession() {
    await this.by('new-session').click();
    await this.page.locator('[data-testid=session][aria-current=true]').waitFor({ timeout: T });
    return this.page.locator('[data-testid=session][aria-current=true]').getAttribute('data-session-id');
  }

  /** Types a message and presses Enter. */
  async say(text) {
    await this.by('composer').fill(text);
    await this.by('composer').press('Enter');
  }

  turns() {
    return this.by('turn');
  }

  turn(i) {
    return this.turns().nth(i);
  }

  async status() {
    return (await this.by('chat-status').textContent()) ?? '';
  }

  async waitStatus(words, timeout = T) {
    await this.by('chat-status').filter({ hasText: words }).waitFor({ timeout });
  }

  /** The texts of every turn: its prompt, then each block's text, one string per turn. */
  async transcript() {
    return this.page.evaluate(() => [...document.querySelectorAll('[data-testid=turn]')].map((t) => t.innerText));
  }

  /** Answers the (single) pending approval of turn `i` with the option `value`. */
  async answer(i, value) {
    const card = this.turn(i).locator('[data-testid=approval][data-resolved=false]');
    await card.locator(`[data-testid=approval-option][data-value=${value}]`).click();
    await this.turn(i).locator('[data-testid=approval-state]').waitFor({ timeout: T });
  }
}
