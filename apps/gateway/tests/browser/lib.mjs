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
    // As printed: the composer in its place below the conversation, not stuck mid-page.
    await page.emulateMedia({ media: 'print' });
    await page.screenshot({ path, fullPage: true });
    await page.emulateMedia({ media: 'screen' });
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

/**
 * Runs `scenario({ context, step, errors })` in a fresh browser: prints what failed and exits
 * non-zero, or checks that no page reported an error or a CSP violation and says so.
 */
export async function run(outDir, scenario) {
  const step = shots(outDir);
  const browser = await launch();
  const errors = [];
  try {
    const context = await browser.newContext({ viewport: { width: 520, height: 900 } });
    await scenario({ context, step, errors });
    const unexpected = errors.filter((e) => !/403|WebSocket connection/.test(e));
    expect(unexpected.length === 0, `no page errors or CSP violations, got ${unexpected.join('; ')}`);
    console.log('all browser checks passed');
  } catch (err) {
    console.error(`FAILED: ${err.message}`);
    console.error(`page errors: ${errors.join(' | ')}`);
    await leftBehind(browser, outDir);
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
}

/**
 * After a failure, what each open page showed: a screenshot (`failed-<n>.png`) and its store
 * in brief (link, sessions, the active one, each chat's turns, notices), so a failure seen
 * once says what the page held.
 */
async function leftBehind(browser, outDir) {
  const pages = browser.contexts().flatMap((c) => c.pages());
  for (const [n, page] of pages.entries()) {
    try {
      await page.screenshot({ path: `${outDir}/failed-${n + 1}.png`, fullPage: true });
      const held = await page.evaluate(() => {
        const s = window.__bb?.store;
        if (!s) return null;
        return {
          link: s.link,
          connection: s.connection,
          activeSessionId: s.activeSessionId,
          sessions: (s.sessions ?? []).map((x) => `${x.sessionId} ${x.title ?? ''} ${x.status ?? ''}`),
          chats: [...s.chats].map(([id, c]) => `${id}: ${c.turns.length} turns, rev ${c.rev}`),
          notices: (s.notices ?? []).map((x) => `${x.kind}: ${x.text}`),
        };
      });
      console.error(`page ${n + 1} (${page.url().replace(/token=[^&]*/, 'token=…')}): ${JSON.stringify(held)}`);
    } catch (e) {
      console.error(`page ${n + 1}: not read (${e.message})`);
    }
  }
}

/** A new page of `context`, watched, and the person using it. */
export async function open(context, label, errors) {
  const page = await context.newPage();
  await watch(page, label, errors);
  return [page, new Person(page)];
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

  /** Hides the page (`bb.visibility`), counting from now the declared resyncs it gets. */
  async hideCountingResyncs() {
    await this.page.evaluate(() => {
      window.__resyncs = 0;
      const handle = window.__bb.rpc.onEvent;
      window.__bb.rpc.onEvent = (name, payload) => {
        if (name === 'bb/events' && payload.resync) window.__resyncs += 1;
        handle(name, payload);
      };
      return window.__bb.rpc.request('bb.visibility', { visible: false });
    });
  }

  /** Shows the page again (`bb.visibility`). */
  async show() {
    await this.page.evaluate(() => window.__bb.rpc.request('bb.visibility', { visible: true }));
  }

  /** The declared resyncs since `hideCountingResyncs`. */
  async resyncs() {
    return this.page.evaluate(() => window.__resyncs);
  }

  /** Answers the (single) pending approval of turn `i` with the option `value`. */
  async answer(i, value) {
    const card = this.turn(i).locator('[data-testid=approval][data-resolved=false]');
    await card.locator(`[data-testid=approval-option][data-value=${value}]`).click();
    await this.turn(i).locator('[data-testid=approval-state]').waitFor({ timeout: T });
  }
}
