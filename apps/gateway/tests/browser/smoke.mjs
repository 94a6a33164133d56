// Drives the sidebar page served by a running bb-gateway (demo engine) in Debian's Chromium.
// Usage: node smoke.mjs <page URL with ?token=> <screenshot dir>
// Prints one line per step; exits non-zero with the reason on the first failure.

import { createServer } from 'node:http';
import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';

const [url, outDir] = process.argv.slice(2);
if (!url || !outDir) {
  console.error('usage: node smoke.mjs <url> <screenshot dir>');
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
const T = 30_000;
let shot = 0;
const step = async (page, name) => {
  shot += 1;
  const path = `${outDir}/${String(shot).padStart(2, '0')}-${name}.png`;
  await page.screenshot({ path, fullPage: true });
  console.log(`ok ${shot} ${name} (${path})`);
};
const expect = (cond, what) => {
  if (!cond) throw new Error(`expected: ${what}`);
};

const browser = await chromium.launch({
  executablePath: process.env.BB_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const cspViolations = [];
const consoleErrors = [];
const watch = (page, label) => {
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(`${label}: ${m.text()}`);
  });
  page.on('pageerror', (e) => consoleErrors.push(`${label}: ${e.message}`));
  page.on('response', (r) => {
    if (r.status() >= 400 && r.status() !== 403) consoleErrors.push(`${label}: HTTP ${r.status()} for ${r.url().replace(/token=[^&]*/, 'token=…')}`);
  });
};

try {
  const context = await browser.newContext({ viewport: { width: 520, height: 900 } });
  const a = await context.newPage();
  watch(a, 'A');
  await a.exposeFunction('__cspViolation', (v) => cspViolations.push(v));
  await a.addInitScript(() => document.addEventListener('securitypolicyviolation', (e) => window.__cspViolation(`${e.violatedDirective} ${e.blockedURI}`)));

  // 1. open the page
  const response = await a.goto(url);
  expect(response.status() === 200, 'the page loads');
  expect(/default-src 'none'/.test(response.headers()['content-security-policy'] ?? ''), 'a strict CSP header');
  await a.getByTestId('engine').filter({ hasText: 'breadboard' }).waitFor({ timeout: T });
  await step(a, 'opened');

  // 2. create a session
  await a.getByTestId('new-session').click();
  await a.locator('[data-testid=session][aria-current=true]').waitFor({ timeout: T });
  const sessionA = await a.locator('[data-testid=session][aria-current=true]').getAttribute('data-session-id');
  await step(a, 'session-created');

  // 3. send a message and watch the text stream in
  // Every distinct text the first reply shows, as the page renders it.
  await a.evaluate(() => {
    window.__samples = [];
    new MutationObserver(() => {
      const t = document.querySelector('[data-testid=msg-assistant]')?.textContent ?? '';
      if (t && window.__samples.at(-1) !== t) window.__samples.push(t);
    }).observe(document.querySelector('[data-testid=transcript]'), { subtree: true, childList: true, characterData: true });
  });
  // Shift+Enter adds a line, Enter sends.
  await a.getByTestId('composer').fill('Add a');
  await a.getByTestId('composer').press('Shift+Enter');
  expect((await a.getByTestId('composer').inputValue()) === 'Add a\n', 'Shift+Enter adds a line');
  await a.getByTestId('composer').fill('Add a Makefile');
  await a.getByTestId('composer').press('Enter');
  await a.getByTestId('msg-user').filter({ hasText: 'Add a Makefile' }).waitFor({ timeout: T });
  const first = a.getByTestId('msg-assistant').first();
  await first.waitFor({ timeout: T });
  await a.getByTestId('msg-assistant').first().filter({ hasText: 'for the C skeleton.' }).waitFor({ timeout: T });
  const whole = (await first.textContent()) ?? '';
  expect(whole.startsWith("I'll look at the workspace"), `streamed text, got ${JSON.stringify(whole)}`);
  const samples = await a.evaluate(() => window.__samples);
  console.log(`streamed: ${JSON.stringify(samples)}`);
  expect(samples.length >= 2 && samples.slice(0, -1).every((s) => whole.startsWith(s) && s.length < whole.length), 'the text grew in steps while streaming');
  await a.getByTestId('tool').first().waitFor({ timeout: T });
  await step(a, 'streamed');

  // 4. approve the permission
  const approval = a.getByTestId('approval').first();
  await approval.getByTestId('allow-once').waitFor({ timeout: T });
  await step(a, 'approval-card');
  await approval.getByTestId('allow-once').focus();
  await a.keyboard.press('Enter');
  await approval.getByTestId('approval-state').waitFor({ timeout: T });
  await a.getByTestId('msg-assistant').filter({ hasText: 'Run `make` to try it.' }).waitFor({ timeout: T });
  await a.getByTestId('run-status').filter({ hasText: 'finished' }).waitFor({ timeout: T });
  await a.getByTestId('diff').first().waitFor({ timeout: T });
  await step(a, 'approved-and-finished');

  // 5. stop a turn
  await a.getByTestId('composer').fill('Once more');
  await a.getByTestId('send').click();
  await a.getByTestId('stop').and(a.locator(':enabled')).waitFor({ timeout: T });
  await a.getByTestId('stop').click();
  await a.getByTestId('stop').and(a.locator(':disabled')).waitFor({ timeout: T });
  await step(a, 'stopped');
  const transcriptBefore = await a.getByTestId('transcript').textContent();

  // 6. reload: the transcript comes back
  await a.reload();
  await a.getByTestId('msg-assistant').filter({ hasText: 'Run `make` to try it.' }).waitFor({ timeout: T });
  const selected = await a.locator('[data-testid=session][aria-current=true]').getAttribute('data-session-id');
  expect(selected === sessionA, 'the same session is selected after reload');
  await step(a, 'reloaded');

  // 6b. a dropped connection: the banner says so, the page reconnects and asks only for what
  // it missed (nothing is duplicated)
  await a.evaluate(() => window.__bb.rpc.socket.close());
  await a.getByTestId('banner').filter({ hasText: 'reconnecting' }).waitFor({ timeout: T });
  // A send while disconnected fails and the composer keeps the text.
  await a.getByTestId('composer').fill('Kept when the send fails');
  await a.getByTestId('composer').press('Enter');
  await a.getByText('not connected to the gateway').first().waitFor({ timeout: T });
  expect((await a.getByTestId('composer').inputValue()) === 'Kept when the send fails', 'the prompt box keeps its text on a failed send');
  await a.getByTestId('composer').fill('');
  // (the failed send left its message and error in the transcript)
  const itemsBefore = await a.getByTestId('transcript').locator(':scope > *').count();
  await step(a, 'reconnecting');
  await a.getByTestId('banner').waitFor({ state: 'hidden', timeout: T });
  await a.getByTestId('engine').filter({ hasText: 'breadboard' }).waitFor({ timeout: T });
  expect((await a.getByTestId('transcript').locator(':scope > *').count()) === itemsBefore, 'the transcript is intact after a reconnect');
  await step(a, 'reconnected');

  // 7. a second page on a second session: no cross-talk
  const b = await context.newPage();
  watch(b, 'B');
  await b.goto(url);
  // Keyboard only: focus the button and press Enter.
  await b.getByTestId('new-session').focus();
  await b.keyboard.press('Enter');
  await b.locator('[data-testid=session][aria-current=true]').waitFor({ timeout: T });
  const sessionB = await b.locator('[data-testid=session][aria-current=true]').getAttribute('data-session-id');
  expect(sessionB !== sessionA, 'the second page has its own session');
  const aItems = await a.getByTestId('transcript').locator(':scope > *').count();
  await b.getByTestId('composer').fill('Hello from B');
  await b.getByTestId('send').click();
  await b.getByTestId('approval').first().waitFor({ timeout: T });
  const bText = await b.getByTestId('transcript').textContent();
  expect(!bText.includes('Once more') && !bText.includes('Add a Makefile'), "page B shows none of A's messages");
  const aText = await a.getByTestId('transcript').textContent();
  expect(!aText.includes('Hello from B'), "page A shows none of B's messages");
  expect((await a.getByTestId('transcript').locator(':scope > *').count()) === aItems, "page A's transcript did not change");
  expect((await a.locator('[data-testid=session][aria-current=true]').getAttribute('data-session-id')) === sessionA, 'page A stays on its session');
  await step(b, 'second-page');
  await step(a, 'first-page-unchanged');

  // 8. refusals: a wrong token, a foreign Origin
  const wrong = await context.newPage();
  const bad = new URL(url);
  bad.searchParams.set('token', 'wrong');
  const refused = await wrong.goto(bad.toString());
  expect(refused.status() === 403, `a wrong token is refused (got ${refused.status()})`);
  await step(wrong, 'wrong-token');
  const wsUrl = `ws://${new URL(url).host}/ws?token=${new URL(url).searchParams.get('token')}`;
  const foreign = createServer((_, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>foreign</title><p>foreign page</p>');
  });
  await new Promise((r) => foreign.listen(0, '127.0.0.1', r));
  const evil = await context.newPage();
  await evil.goto(`http://127.0.0.1:${foreign.address().port}/`);
  const outcome = await evil.evaluate((u) => new Promise((resolve) => {
    const ws = new WebSocket(u);
    ws.onopen = () => resolve('open');
    ws.onerror = () => resolve('refused');
  }), wsUrl);
  foreign.close();
  expect(outcome === 'refused', `a foreign Origin is refused (got ${outcome})`);
  console.log('ok foreign origin refused');

  console.log(`debug drawer: ${await a.getByTestId('debug-drawer').locator('summary').textContent()}`);
  expect(cspViolations.length === 0, `no CSP violations, got ${cspViolations.join('; ')}`);
  const unexpected = consoleErrors.filter((e) => !/403|WebSocket connection/.test(e));
  expect(unexpected.length === 0, `no page errors, got ${unexpected.join('; ')}`);
  console.log('all browser checks passed');
} catch (err) {
  console.error(`FAILED: ${err.message}`);
  console.error(`console errors: ${consoleErrors.join(' | ')}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
