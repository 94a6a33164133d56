// The page's folder choice on a bb-gateway serving two folders (demo engine), in Debian's
// Chromium: the choice is offered next to "New session", lists both folders (the default
// first), and the session created after picking the second is created there (the page shows
// it selected; the caller checks its folder over the WebSocket).
// Usage: node folders.mjs <page URL with ?token=> <screenshot dir> <second folder's name>

import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';

const [url, outDir, second] = process.argv.slice(2);
if (!url || !outDir || !second) {
  console.error('usage: node folders.mjs <url> <screenshot dir> <second folder name>');
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
const T = 30_000;
const expect = (cond, what) => {
  if (!cond) throw new Error(`expected: ${what}`);
};

const browser = await chromium.launch({
  executablePath: process.env.BB_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage({ viewport: { width: 520, height: 700 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  const choice = page.getByTestId('new-session-folder');
  await choice.waitFor({ timeout: T });
  const options = await choice.locator('option').allTextContents();
  expect(options.length === 2 && options[1] === second, `two folders, ${second} second: ${options}`);
  expect(await choice.getAttribute('aria-label') !== null, 'the choice is labelled');
  await choice.selectOption({ index: 1 });
  await page.getByTestId('new-session').click();
  await page.locator('[data-testid=session][aria-current=true]').waitFor({ timeout: T });
  await page.screenshot({ path: `${outDir}/folders-new-session-in-second-folder.png`, fullPage: true });
  expect(errors.length === 0, `no page errors: ${errors}`);
  console.log('ok folder choice offered and used');
  console.log('all folder checks passed');
} finally {
  await browser.close();
}
