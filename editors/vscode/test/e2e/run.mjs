// End to end in a real VS Code: code-server (VS Code's web build, from npm) driven by Debian's
// Chromium through playwright-core, with the packaged .vsix installed as a user installs it.
// Usage: node test/e2e/run.mjs <vsix> <code-server launcher> <node 24 bin dir> <out dir>
//   env BB_KILO_BIN: the Kilo engine (the last step runs one session on it).
// Prints one line per step (screenshots in <out dir>); exits 1 with the reason on the first
// failure. Everything it starts (code-server, the sidecars, the mock LLM) is stopped at the
// end, also on failure.

import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const [vsix, codeServer, nodeBin, outDir] = process.argv.slice(2);
if (!vsix || !codeServer || !nodeBin || !outDir) {
  console.error('usage: node run.mjs <vsix> <code-server> <node24 bin dir> <out dir>');
  process.exit(2);
}
const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const T = 60_000;
mkdirSync(outDir, { recursive: true });
const root = mkdtempSync(join(tmpdir(), 'bb-vscode-e2e-'));
const dirs = Object.fromEntries(['home', 'data', 'ext', 'xdg/config/kilo', 'xdg/data', 'xdg/state', 'xdg/cache', 'run', 'demo', 'kilo'].map((d) => {
  mkdirSync(join(root, d), { recursive: true });
  return [d, join(root, d)];
}));
writeFileSync(join(dirs.demo, 'hello.c'), 'int main(void) { return 0; }\n');
writeFileSync(join(dirs.kilo, 'hello.txt'), 'hello world\n');
// The Kilo engine is on the user's PATH, as a user installs it (`~/.local/bin`, added by
// `~/.profile`: VS Code gives the extension host its login shell's environment, so the PATH
// code-server starts with does not reach it). Not the `bbBridge.engineBinary` setting: it is
// restricted, and VS Code withheld it from the untrusted Kilo window in some runs.
const kiloBin = process.env.BB_KILO_BIN;
mkdirSync(join(dirs.home, '.local/bin'), { recursive: true });
if (kiloBin && existsSync(kiloBin)) symlinkSync(kiloBin, join(dirs.home, '.local/bin/kilo'));
writeFileSync(join(dirs.home, '.profile'), 'PATH="$HOME/.local/bin:$PATH"\n');
const env = {
  PATH: `${nodeBin}:${process.env.PATH}`,
  HOME: dirs.home,
  XDG_CONFIG_HOME: join(root, 'xdg/config'),
  XDG_DATA_HOME: dirs['xdg/data'],
  XDG_STATE_HOME: dirs['xdg/state'],
  XDG_CACHE_HOME: dirs['xdg/cache'],
  XDG_RUNTIME_DIR: join(root, 'run'),
  LANG: 'C.UTF-8',
  EXTENSIONS_GALLERY: '{}',
  KILO_TELEMETRY_LEVEL: 'off',
  ...Object.fromEntries(['AUTOUPDATE', 'MODELS_FETCH', 'DEFAULT_PLUGINS', 'SHARE', 'LSP_DOWNLOAD', 'CLAUDE_CODE', 'SESSION_INGEST'].map((f) => [`KILO_DISABLE_${f}`, '1'])),
};
const userSettings = (extra) => {
  mkdirSync(join(dirs.data, 'User'), { recursive: true });
  writeFileSync(join(dirs.data, 'User', 'settings.json'), JSON.stringify({
    'telemetry.telemetryLevel': 'off',
    'extensions.autoCheckUpdates': false,
    'chat.disableAIFeatures': true,
    'workbench.startupEditor': 'none',
    'security.workspace.trust.startupPrompt': 'never',
    'security.workspace.trust.banner': 'always',
    'bbBridge.linger': 20,
    ...extra,
  }, null, 2));
};

let shot = 0;
const step = async (page, name) => {
  shot += 1;
  const path = join(outDir, `${String(shot).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path });
  console.log(`ok ${shot} ${name} (${path})`);
};
const expect = (cond, what) => {
  if (!cond) throw new Error(`expected: ${what}`);
};
const freePort = () => new Promise((resolve) => {
  const srv = createServer();
  srv.listen(0, '127.0.0.1', () => {
    const { port } = srv.address();
    srv.close(() => resolve(port));
  });
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const started = [];
let server = null;
let browser = null;
let page = null;
const sidecarPids = new Set();

/** The sidecar pids of every workspace (from their socket lock files). */
function sidecarsNow() {
  const found = [];
  const walk = (dir) => {
    if (!existsSync(dir)) return;
    for (const entry of execFileSync('find', [dir, '-name', '*.sock.lock'], { encoding: 'utf8' }).split('\n').filter(Boolean)) {
      const pid = Number.parseInt(readFileSync(entry, 'utf8'), 10);
      if (Number.isInteger(pid)) found.push(pid);
    }
  };
  walk(root);
  return found.filter((pid) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  });
}

async function startServer() {
  const port = await freePort();
  const child = spawn(codeServer, ['--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry', '--disable-update-check',
    '--disable-getting-started-override', '--user-data-dir', dirs.data, '--extensions-dir', dirs.ext], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let log = '';
  child.stdout.on('data', (d) => { log += d; });
  child.stderr.on('data', (d) => { log += d; });
  const deadline = Date.now() + T;
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (res.ok) break;
    } catch {}
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`code-server did not start: ${log.slice(-2000)}`);
    await sleep(250);
  }
  return { child, port, log: () => log };
}

function stopServer(s) {
  if (!s) return;
  try {
    process.kill(-s.child.pid, 'SIGTERM');
  } catch {}
}

/** The bb-bridge webview's inner frame (the page's composer in it). */
async function chatFrame(page, within = T) {
  const deadline = Date.now() + within;
  for (;;) {
    for (const frame of page.frames()) {
      try {
        if (await frame.locator('[data-testid=composer]').count()) return frame;
      } catch {}
    }
    if (Date.now() > deadline) throw new Error('the bb-bridge view did not show the page');
    await sleep(250);
  }
}

async function command(page, name) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ timeout: T });
  await input.fill(`>${name}`);
  await page.locator('.quick-input-list .monaco-list-row').filter({ hasText: name }).first().waitFor({ timeout: T });
  await input.press('Enter');
}

/** Trusts the open folder through the workspace trust editor, then closes it. */
async function grantTrust(page) {
  await command(page, 'Workspaces: Manage Workspace Trust');
  const trustButton = page.locator('.workspace-trust-editor .monaco-button').filter({ hasText: /^Trust$/ }).first();
  await trustButton.waitFor({ timeout: T });
  await trustButton.click();
  await page.locator('.statusbar-item').filter({ hasText: 'Restricted Mode' }).waitFor({ state: 'detached', timeout: T });
  await page.keyboard.press('Control+W');
}

/** Shows the bb-bridge view container (a click on its icon while it shows would hide it). */
async function openView(page) {
  const icon = page.locator('.activitybar .action-item').filter({ has: page.locator('[aria-label^="bb-bridge"]') }).first();
  await icon.waitFor({ timeout: T });
  // VS Code may restore the view a moment after the workbench shows: a click then would
  // toggle it off again, so look, click only when hidden, and look again.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    await sleep(500);
    const shown = (await icon.evaluate((el) => el.classList.contains('checked'))) && (await page.locator('.part.sidebar').first().isVisible());
    if (!shown) await icon.click();
    try {
      return await chatFrame(page, 10_000);
    } catch {}
  }
  return chatFrame(page);
}

/** Waits for `pick(frame)` to be visible in the bb-bridge view; resolves the view's frame.
 * VS Code restores the side bar's last view while a new window starts, which can hide the
 * bb-bridge view after it was opened (the page keeps running, its elements hidden) or
 * replace its webview: while the wait lasts, the view is shown again (and its frame found
 * again) when that happened, and said. */
async function waitInView(page, frame, pick, timeout) {
  const deadline = Date.now() + timeout;
  for (;;) {
    try {
      await pick(frame).waitFor({ timeout: Math.max(1, Math.min(5000, deadline - Date.now())) });
      return frame;
    } catch (err) {
      if (Date.now() >= deadline) throw err;
    }
    const icon = page.locator('.activitybar .action-item').filter({ has: page.locator('[aria-label^="bb-bridge"]') }).first();
    const shown = (await icon.evaluate((el) => el.classList.contains('checked')).catch(() => false)) && (await page.locator('.part.sidebar').first().isVisible());
    if (!shown) {
      console.log('the bb-bridge view was hidden (VS Code restored another view); showing it again');
      await icon.click().catch(() => {});
    }
    if (frame.isDetached()) {
      console.log('the bb-bridge view was recreated; finding its page again');
      frame = await chatFrame(page, Math.max(1000, deadline - Date.now())).catch(() => frame);
    }
  }
}

async function openWorkbench(page, folder) {
  await page.goto(`http://127.0.0.1:${server.port}/?folder=${encodeURIComponent(folder)}`);
  await page.locator('.monaco-workbench').waitFor({ timeout: T });
  await page.locator('.activitybar [aria-label^="bb-bridge"]').first().waitFor({ timeout: T });
}

/** What a failure needs to be understood: the text of every bb-bridge page (its engine label,
 * connection notices and transcript), the workbench's notifications, every sidecar that runs
 * (its command line) and the tail of every sidecar log and extension host log. */
async function diagnostics(page) {
  const out = [];
  for (const frame of page?.frames() ?? []) {
    try {
      if (!(await frame.locator('[data-testid=composer]').count())) continue;
      const engine = await frame.getByTestId('engine').textContent({ timeout: 1000 }).catch(() => '(none)');
      const text = await frame.locator('body').innerText({ timeout: 2000 });
      out.push(`bb-bridge page ${frame.url().slice(0, 120)}: engine label ${JSON.stringify(engine)}\n${text.slice(-3000)}`);
    } catch {}
  }
  try {
    const notes = await page.locator('.notifications-toasts, .notification-list-item').allInnerTexts();
    if (notes.length) out.push(`workbench notifications: ${JSON.stringify(notes)}`);
  } catch {}
  for (const pid of sidecarsNow()) {
    try {
      out.push(`sidecar ${pid}: ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ')}`);
    } catch {}
  }
  const find = (name) => execFileSync('find', [root, '-name', name], { encoding: 'utf8' }).split('\n').filter(Boolean);
  for (const log of [...find('sidecar.log'), ...find('exthost.log')]) {
    try {
      out.push(`${log} (tail):\n${readFileSync(log, 'utf8').split('\n').slice(-40).join('\n')}`);
    } catch {}
  }
  return out.join('\n\n');
}

const assistantTexts = (frame) => frame.getByTestId('msg-assistant').allTextContents();
// An approval card's "Allow once".
const ALLOW_ONCE = '[data-testid=approval-option][data-value=allow_once]';
const DEMO_REPLY = [
  "I'll look at the workspace first, then add a Makefile for the C skeleton.",
  'The workspace is empty. Creating the Makefile needs your approval.',
  'Done: the Makefile builds test from main.o with warnings as errors. Run make to try it.',
];

/** A new session, a message sent with Enter, its reply streaming; resolves the session id. */
async function newSessionStreaming(frame, text) {
  const sessions = await frame.getByTestId('session').count();
  const before = await frame.locator('[data-testid=session][aria-current=true]').getAttribute('data-session-id', { timeout: 1000 }).catch(() => null);
  await frame.getByTestId('new-session').click();
  await frame.getByTestId('session').nth(sessions).waitFor({ timeout: T });
  // The new session is listed a moment before it is selected: wait for the selection to move.
  const selected = frame.locator(`[data-testid=session][aria-current=true]${before ? `:not([data-session-id="${before}"])` : ''}`);
  await selected.waitFor({ timeout: T });
  const id = await selected.getAttribute('data-session-id');
  await frame.getByTestId('composer').fill(text);
  await frame.getByTestId('composer').press('Enter');
  await frame.getByTestId('msg-assistant').first().waitFor({ timeout: T });
  return id;
}

/** Approves the demo turn's edit and checks the reply is whole and shown once. */
async function finishDemoTurn(frame) {
  const allow = frame.getByTestId('approval').first().locator(ALLOW_ONCE);
  await allow.waitFor({ timeout: T });
  await allow.click();
  await frame.getByTestId('msg-assistant').filter({ hasText: 'Run make to try it.' }).waitFor({ timeout: T });
  const shown = await assistantTexts(frame);
  expect(JSON.stringify(shown) === JSON.stringify(DEMO_REPLY), `the reply whole and once, got ${JSON.stringify(shown)}`);
  expect((await frame.locator('[data-testid^=notice-gap]').count()) === 0, 'no delivery gap notice');
}

try {
  // Install the package as a user does, then start VS Code on the demo workspace, untrusted.
  userSettings({});
  execFileSync(codeServer, ['--user-data-dir', dirs.data, '--extensions-dir', dirs.ext, '--install-extension', vsix], { env, stdio: 'pipe' });
  console.log(`ok installed ${vsix}`);
  server = await startServer();
  browser = await chromium.launch({
    executablePath: process.env.BB_CHROMIUM ?? '/usr/bin/chromium',
    args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  page = await context.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await openWorkbench(page, dirs.demo);
  await step(page, 'workbench-restricted-mode');

  // 1. open the view
  let frame = await openView(page);
  await frame.getByTestId('engine').filter({ hasText: 'breadboard' }).waitFor({ timeout: T });
  await step(page, 'view-opened');

  // 2. a session on the demo engine; 3. send with Enter and watch it stream
  await frame.getByTestId('new-session').click();
  await frame.locator('[data-testid=session][aria-current=true]').waitFor({ timeout: T });
  const session = await frame.locator('[data-testid=session][aria-current=true]').getAttribute('data-session-id');
  await frame.evaluate(() => {
    window.__samples = [];
    new MutationObserver(() => {
      const t = document.querySelector('[data-testid=msg-assistant]')?.textContent ?? '';
      if (t && window.__samples.at(-1) !== t) window.__samples.push(t);
    }).observe(document.querySelector('[data-testid=transcript]'), { subtree: true, childList: true, characterData: true });
  });
  await frame.getByTestId('composer').fill('Add a Makefile');
  await frame.getByTestId('composer').press('Enter');
  await frame.getByTestId('msg-user').filter({ hasText: 'Add a Makefile' }).waitFor({ timeout: T });
  await frame.getByTestId('msg-assistant').first().filter({ hasText: 'for the C skeleton.' }).waitFor({ timeout: T });
  const samples = await frame.evaluate(() => window.__samples);
  const whole = (await frame.getByTestId('msg-assistant').first().textContent()) ?? '';
  console.log(`streamed: ${JSON.stringify(samples)}`);
  expect(samples.length >= 2 && samples.slice(0, -1).every((s) => whole.startsWith(s) && s.length < whole.length), 'the reply grew in steps (streamed)');
  expect((await frame.getByTestId('composer').inputValue()) === '', 'Enter sent the message (the box is empty)');
  await step(page, 'streamed');

  // 4. grant trust (the demo's approval is allowed then; the refusal before trust is checked
  // on the real Kilo server below, whose permissions the bridge gates by trust)
  await grantTrust(page);
  await step(page, 'trust-granted');
  frame = await chatFrame(page);
  await frame.getByTestId('approval').first().locator(ALLOW_ONCE).click();
  await frame.getByTestId('approval').first().getByTestId('approval-state').waitFor({ timeout: T });
  await frame.getByTestId('msg-assistant').filter({ hasText: 'Run make to try it.' }).waitFor({ timeout: T });
  await frame.getByTestId('chat-status').filter({ hasText: 'Done' }).waitFor({ timeout: T });
  await step(page, 'approved-after-trust');

  // 5. hide the view while a reply streams (a new session), show it again: complete, once
  await newSessionStreaming(frame, 'Once more');
  await page.locator('.activitybar [aria-label^="Explorer"]').first().click();
  await step(page, 'view-hidden');
  await sleep(2500);
  frame = await openView(page);
  await finishDemoTurn(frame);
  await step(page, 'shown-again-complete');

  // 6. a diff in VS Code's diff editor
  await frame.getByTestId('tool-diff').first().getByTestId('open-diff').click();
  await page.locator('.monaco-diff-editor').first().waitFor({ timeout: T });
  await page.locator('.tab').filter({ hasText: "Makefile (agent's change)" }).first().waitFor({ timeout: T });
  await step(page, 'diff-editor');
  await page.keyboard.press('Control+W');

  // 7. reload the window while a reply streams: the tabs and the transcript come back and
  // the session goes on to the end of its turn
  const reloaded = await newSessionStreaming(frame, 'Across a reload');
  const owner = sidecarsNow();
  owner.forEach((p) => sidecarPids.add(p));
  expect(owner.length === 1, `one sidecar for the workspace, found ${owner.length}`);
  await command(page, 'Developer: Reload Window');
  await page.locator('.monaco-workbench').waitFor({ timeout: T });
  frame = await openView(page);
  await frame.locator(`[data-testid=session][aria-current=true][data-session-id="${reloaded}"]`).waitFor({ timeout: T });
  await frame.getByTestId('msg-user').filter({ hasText: 'Across a reload' }).waitFor({ timeout: T });
  expect((await frame.getByTestId('session').count()) === 3, 'the three sessions are listed');
  await step(page, 'reloaded');
  await finishDemoTurn(frame);
  expect(JSON.stringify(sidecarsNow()) === JSON.stringify(owner), 'the same sidecar serves the reloaded window');
  await step(page, 'session-went-on');

  // 8. one session on the real Kilo server (a second workspace, engine = kilo, `kilo` found
  // on PATH), opened in Restricted Mode and trusted below
  expect(kiloBin && existsSync(kiloBin), 'BB_KILO_BIN names the Kilo engine (scripts/engine.sh installs it)');
  const mock = spawn('python3', [join(repo, 'crates/kilo/mock_llm.py'), '--host', '127.0.0.1', '--port', '0', '--slow-seconds', '60', '--delay', '0.05', '--port-file', join(root, 'mock.port')], { stdio: 'ignore' });
  started.push(mock);
  const portDeadline = Date.now() + T;
  while (!existsSync(join(root, 'mock.port')) || !readFileSync(join(root, 'mock.port'), 'utf8').trim()) {
    if (Date.now() > portDeadline) throw new Error('the mock LLM did not start');
    await sleep(100);
  }
  const mockPort = Number(readFileSync(join(root, 'mock.port'), 'utf8').trim());
  writeFileSync(join(root, 'xdg/config/kilo/kilo.json'), JSON.stringify({
    $schema: 'https://app.kilo.ai/config.json', model: 'mock/mock-model', small_model: 'mock/mock-model', autoupdate: false, share: 'disabled',
    provider: { mock: { npm: '@ai-sdk/openai-compatible', name: 'Mock LLM', options: { baseURL: `http://127.0.0.1:${mockPort}/v1`, apiKey: 'mock-key' },
      models: { 'mock-model': { name: 'Mock Model', tool_call: true, limit: { context: 128000, output: 4096 } } } } },
    permission: { bash: 'ask', edit: 'ask' }, enabled_providers: ['mock'], snapshot: false,
  }, null, 2));
  userSettings({ 'bbBridge.engine': 'kilo' });
  const kiloOpened = Date.now();
  await openWorkbench(page, dirs.kilo);
  await step(page, 'kilo-workspace-restricted');
  frame = await openView(page);
  // The page shows the engine once the new workspace's sidecar answered `bb.init` (the
  // engine itself may still be starting).
  frame = await waitInView(page, frame, (f) => f.getByTestId('engine').filter({ hasText: 'kilo' }), 120_000);
  console.log(`kilo engine label after ${Date.now() - kiloOpened} ms: ${JSON.stringify(await frame.getByTestId('engine').textContent())}`);
  await frame.getByTestId('new-session').click();
  await frame.locator('[data-testid=session][aria-current=true]').waitFor({ timeout: 120_000 });
  await frame.getByTestId('composer').fill('Say hello MOCK:text:hello%20from%20the%20real%20kilo%20server');
  await frame.getByTestId('composer').press('Enter');
  await frame.getByTestId('msg-assistant').filter({ hasText: 'hello from the real kilo server' }).first().waitFor({ timeout: 120_000 });
  await step(page, 'kilo-session');
  // A command the engine asks to run: refused in Restricted Mode (the request stays), allowed
  // once the workspace is trusted, without a reload.
  await frame.getByTestId('composer').fill('Run it MOCK:bash:echo%20zebra42');
  await frame.getByTestId('composer').press('Enter');
  const approval = frame.getByTestId('approval').first();
  await approval.locator(ALLOW_ONCE).click({ timeout: 120_000 });
  await approval.getByTestId('approval-error').filter({ hasText: 'Restricted Mode' }).waitFor({ timeout: T });
  expect(await approval.locator(ALLOW_ONCE).isVisible(), 'the request stays pending before trust');
  await step(page, 'kilo-approval-refused-untrusted');
  await grantTrust(page);
  frame = await chatFrame(page);
  await frame.getByTestId('approval').first().locator(ALLOW_ONCE).click();
  await frame.getByTestId('approval').first().getByTestId('approval-state').waitFor({ timeout: T });
  await frame.getByTestId('msg-assistant').filter({ hasText: 'zebra42' }).first().waitFor({ timeout: 120_000 });
  await step(page, 'kilo-approved-after-trust');
  sidecarsNow().forEach((p) => sidecarPids.add(p));

  const unexpected = pageErrors.filter((e) => !/ResizeObserver|Canceled/.test(e));
  if (unexpected.length) console.log(`workbench page errors (not failing): ${unexpected.join(' | ')}`);
  console.log('all VS Code checks passed');
  console.log(`vscode e2e: ${shot} passed, 0 failed`);
} catch (err) {
  console.error(`FAILED: ${err.stack ?? err}`);
  await page?.screenshot({ path: join(outDir, 'failure.png') }).then(() => console.error(`screenshot: ${join(outDir, 'failure.png')}`), () => {});
  console.error(`diagnostics:\n${await diagnostics(page).catch((e) => `(diagnostics failed: ${e})`)}`);
  if (server) console.error(`code-server log tail:\n${server.log().slice(-3000)}`);
  console.error(`vscode e2e: ${shot} passed, 1 failed`);
  process.exitCode = 1;
} finally {
  await browser?.close().catch(() => {});
  stopServer(server);
  for (const child of started) child.kill('SIGKILL');
  for (const pid of [...sidecarPids, ...sidecarsNow()]) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {}
  }
  // The sidecars stop their engines on SIGTERM; wait for them, then remove the world.
  const deadline = Date.now() + 20_000;
  while (sidecarsNow().length && Date.now() < deadline) await sleep(200);
  if (process.env.BB_KEEP_E2E !== '1') rmSync(root, { recursive: true, force: true });
}
