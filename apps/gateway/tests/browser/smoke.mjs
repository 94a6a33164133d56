// The sidebar page on the demo engine, in Debian's Chromium, step by step as a person uses
// it: three turns in one session (each reply under its own message, each approval shown and
// settled, a Deny honoured), a stop, a reload, a dropped connection, a second tab opening
// the session, a delete undone, a declared resync, and the refusals.
// Usage: node smoke.mjs <page URL> <page URL of a gateway with a 2-message ring> <shots dir>
// Prints one line per step; exits non-zero with the reason on the first failure.

import { createServer } from 'node:http';
import { T, expect, open, run } from './lib.mjs';

const [url, resyncUrl, outDir] = process.argv.slice(2);
if (!url || !resyncUrl || !outDir) {
  console.error('usage: node smoke.mjs <url> <resync url> <screenshot dir>');
  process.exit(2);
}
await run(outDir, async ({ context, step, errors }) => {
  const [pageA, a] = await open(context, 'A', errors);

  // Opened: the engine in words, and a hint instead of a blank box.
  const response = await pageA.goto(url);
  expect(response.status() === 200, 'the page loads');
  expect(/default-src 'none'/.test(response.headers()['content-security-policy'] ?? ''), 'a strict CSP header');
  await a.by('engine').filter({ hasText: 'Demo engine · ready' }).waitFor({ timeout: T });
  await a.by('empty').filter({ hasText: 'New session' }).waitFor({ timeout: T });
  await step(pageA, 'opened');

  const sessionA = await a.newSession();
  await a.by('empty').filter({ hasText: 'send a message' }).waitFor({ timeout: T });
  expect((await a.by('session').first().textContent()).includes('New session'), 'a new session is called “New session”');
  await step(pageA, 'new-session');

  // Turn 1: the reply streams under the message; the tools read as a person reads them.
  await pageA.evaluate(() => {
    window.__samples = [];
    new MutationObserver(() => {
      const t = document.querySelector('[data-testid=turn] [data-testid=msg-assistant]')?.textContent ?? '';
      if (t && window.__samples.at(-1) !== t) window.__samples.push(t);
    }).observe(document.querySelector('[data-testid=transcript]'), { subtree: true, childList: true, characterData: true });
  });
  // Shift+Enter adds a line, Enter sends (and empties the box).
  await a.by('composer').fill('Add a');
  await a.by('composer').press('Shift+Enter');
  expect((await a.by('composer').inputValue()) === 'Add a\n', 'Shift+Enter adds a line');
  await a.say('Add a Makefile');
  await a.turn(0).getByTestId('msg-user').filter({ hasText: 'Add a Makefile' }).waitFor({ timeout: T });
  expect((await a.by('composer').inputValue()) === '', 'Enter sent the message');
  await a.turn(0).getByTestId('msg-assistant').first().filter({ hasText: 'for the C skeleton.' }).waitFor({ timeout: T });
  const samples = await pageA.evaluate(() => window.__samples);
  const whole = samples.at(-1) ?? '';
  expect(samples.length >= 2 && samples.slice(0, -1).every((s) => whole.startsWith(s) && s.length < whole.length),
    `the text grew in steps while streaming: ${JSON.stringify(samples)}`);
  await a.turn(0).getByTestId('tool-files').filter({ hasText: '.breadboard/' }).waitFor({ timeout: T });
  await a.turn(0).getByTestId('tool-diff').filter({ hasText: '+CC=gcc' }).waitFor({ timeout: T });
  await a.turn(0).getByTestId('approval-prompt').filter({ hasText: 'Edit Makefile' }).waitFor({ timeout: T });
  await a.waitStatus('Waiting for your approval');
  const raw = (await a.turn(0).innerText());
  expect(!/"entries"|"items"|\\n|\{"patch"/.test(raw), `no raw JSON in the turn: ${raw}`);
  await step(pageA, 'turn1-approval');
  await a.answer(0, 'allow_once');
  await a.turn(0).getByTestId('msg-assistant').filter({ hasText: 'Run make to try it.' }).waitFor({ timeout: T });
  await a.turn(0).getByTestId('tool-summary').filter({ hasText: 'Created Makefile (+7)' }).waitFor({ timeout: T });
  expect((await a.turn(0).getByTestId('approval-state').textContent()) === 'Allowed once', 'the approval says it was allowed once');
  await a.waitStatus('Done');
  await a.by('session').filter({ hasText: 'Add a Makefile' }).waitFor({ timeout: T });
  await step(pageA, 'turn1-allowed');
  const turn1 = await a.turn(0).innerText();
  // The Run drawer: the state in words and the file the turn created.
  await a.by('run-drawer').locator('summary').click();
  await a.by('files-changed').filter({ hasText: 'Makefile new +7 −0' }).waitFor({ timeout: T });
  expect((await a.by('run-status').textContent()).startsWith('Done · 1 turn'), 'the run says done, in words');
  await a.by('run-drawer').locator('summary').click();

  // Turn 2: a second message gets its own turn; Deny is honoured.
  await a.say('Now with debug flags');
  await a.turns().nth(1).getByTestId('msg-user').filter({ hasText: 'Now with debug flags' }).waitFor({ timeout: T });
  await a.turn(1).getByTestId('approval-prompt').filter({ hasText: 'Edit Makefile' }).waitFor({ timeout: T });
  await a.waitStatus('Waiting for your approval');
  await step(pageA, 'turn2-approval');
  await a.answer(1, 'deny');
  await a.turn(1).getByTestId('msg-assistant').filter({ hasText: 'Understood: I left the workspace unchanged.' }).waitFor({ timeout: T });
  await a.turn(1).getByTestId('tool-summary').filter({ hasText: 'Not applied: you denied it' }).waitFor({ timeout: T });
  expect((await a.turn(1).getByTestId('approval-state').textContent()) === 'Denied', 'the approval says it was denied');
  expect(!(await a.turn(1).innerText()).includes('Done: the Makefile'), 'the denied turn does not claim the change');
  expect((await a.turn(0).innerText()) === turn1, 'the first turn did not change');
  await a.waitStatus('Done');
  expect((await a.turns().count()) === 2, 'two turns');
  await step(pageA, 'turn2-denied');

  // Turn 3: stopped while it streams: the turn says so, the status too.
  await a.say('Once more');
  await a.turn(2).getByTestId('msg-assistant').first().waitFor({ timeout: T });
  await a.by('stop').and(pageA.locator(':enabled')).waitFor({ timeout: T });
  await a.by('stop').click();
  await a.turn(2).locator('[data-testid=status-card][data-level=stopped]').waitFor({ timeout: T });
  await a.waitStatus('Stopped');
  await a.by('stop').and(pageA.locator(':disabled')).waitFor({ timeout: T });
  expect(!(await a.by('session').first().innerText()).includes('working'), 'the session is not “working” any more');
  expect((await a.turns().count()) === 3, 'three turns');
  await step(pageA, 'turn3-stopped');
  const before = await a.transcript();

  // Reload: the same three turns come back, on the same session.
  await pageA.reload();
  await a.turn(2).locator('[data-testid=status-card][data-level=stopped]').waitFor({ timeout: T });
  expect(JSON.stringify(await a.transcript()) === JSON.stringify(before), `the reloaded page shows the same turns:\n${JSON.stringify(await a.transcript())}\n${JSON.stringify(before)}`);
  expect((await pageA.locator('[data-testid=session][aria-current=true]').getAttribute('data-session-id')) === sessionA, 'the same session is selected');
  await step(pageA, 'reloaded');

  // A dropped connection: the banner says so; back, nothing is lost or doubled.
  // The page's reconnect is held until released, so a slow machine cannot reconnect before the send.
  await pageA.evaluate(() => {
    const rpc = window.__bb.rpc;
    let due = false;
    rpc.connect = () => { due = true; };
    window.__releaseReconnect = () => { delete rpc.connect; if (due) rpc.connect(); };
    rpc.socket.close();
  });
  await a.by('banner').filter({ hasText: 'reconnecting' }).waitFor({ timeout: T });
  // A message sent meanwhile is not lost: its bubble says it was not sent, the box has it back.
  await a.say('Kept when the send fails');
  await pageA.locator('[data-testid=msg-user].failed').filter({ hasText: 'Not sent' }).waitFor({ timeout: T });
  expect((await a.by('composer').inputValue()) === 'Kept when the send fails', 'the box keeps the text of a failed send');
  await step(pageA, 'reconnecting');
  await pageA.evaluate(() => window.__releaseReconnect());
  await a.by('composer').fill('');
  await pageA.locator('[data-testid=msg-user].failed').waitFor({ state: 'detached', timeout: T });
  await a.by('banner').waitFor({ state: 'hidden', timeout: T });
  await a.by('engine').filter({ hasText: 'ready' }).waitFor({ timeout: T });
  expect(JSON.stringify(await a.transcript()) === JSON.stringify(before), 'the conversation is intact after a reconnect');
  await step(pageA, 'reconnected');

  // A second tab opens the session: the same conversation.
  const [pageB, b] = await open(context, 'B', errors);
  await pageB.goto(url);
  await b.by('session').filter({ hasText: 'Add a Makefile' }).click();
  await b.turn(2).locator('[data-testid=status-card][data-level=stopped]').waitFor({ timeout: T });
  // The cards were answered in tab A: tab B says so, and otherwise shows the same turns.
  const seenByB = JSON.stringify(await b.transcript());
  expect(seenByB.includes('in another window'), 'the second tab says the cards were answered in another window');
  expect(seenByB.replaceAll(' in another window', '') === JSON.stringify(before), 'the second tab shows the same turns');
  await step(pageB, 'second-tab-opened-the-session');

  // The second tab's own session: no cross-talk (created by keyboard only).
  await b.by('new-session').focus();
  await pageB.keyboard.press('Enter');
  await pageB.locator(`[data-testid=session][aria-current=true]:not([data-session-id="${sessionA}"])`).waitFor({ timeout: T });
  await b.say('Hello from B');
  await b.turn(0).getByTestId('approval').waitFor({ timeout: T });
  expect(!(await b.by('transcript').innerText()).includes('Add a Makefile'), "B's session shows none of A's");
  expect(!(await a.by('transcript').innerText()).includes('Hello from B'), "A shows none of B's");
  expect(JSON.stringify(await a.transcript()) === JSON.stringify(before), "A's conversation did not change");
  // Tab A's keyboard focus is on its own session while B's turn ends: the `bb/state` that
  // says so updates the list's rows in place, so the focus stays where it was.
  const running = pageA.locator('[data-testid=session]', { hasText: 'Hello from B' }).getByTestId('session-status').filter({ hasText: 'working' });
  await running.waitFor({ timeout: T });
  await a.by('session').filter({ hasText: 'Add a Makefile' }).focus();
  await b.answer(0, 'deny');
  await b.waitStatus('Done');
  await running.waitFor({ state: 'hidden', timeout: T });
  const focused = await pageA.evaluate(() => `${document.activeElement?.dataset.testid} ${document.activeElement?.textContent}`);
  expect(focused === 'session Add a Makefile', `the focus stays on the session it was on, got ${focused}`);
  await step(pageB, 'second-tab-own-session');

  // Delete asks for nothing but can be undone for a few seconds.
  await a.by('session').filter({ hasText: 'Hello from B' }).waitFor({ timeout: T });
  const deleteB = pageA.locator('li', { has: pageA.locator('[data-testid=session]', { hasText: 'Hello from B' }) }).getByTestId('delete-session');
  await deleteB.click();
  // Undone at once: a screenshot on a loaded machine can outlast the few seconds.
  await a.by('undo-delete').click({ timeout: T });
  await a.by('session').filter({ hasText: 'Hello from B' }).waitFor({ timeout: T });
  expect(await a.by('undo-delete').count() === 0, 'undo leaves no pending delete');
  await deleteB.click();
  await a.by('undo-delete').waitFor({ timeout: T });
  await step(pageA, 'delete-undo-offered');
  await a.by('session').filter({ hasText: 'Hello from B' }).waitFor({ state: 'detached', timeout: T });
  await a.by('session-deleting').waitFor({ state: 'detached', timeout: T });
  await b.by('session').filter({ hasText: 'Hello from B' }).waitFor({ state: 'detached', timeout: T });
  await step(pageA, 'deleted');

  // A declared resync: a tab that fell behind more than its ring holds is rebuilt.
  const [pageC, c] = await open(context, 'C', errors);
  await pageC.goto(resyncUrl);
  await c.newSession();
  await c.say('Add a Makefile');
  await c.turn(0).getByTestId('approval').waitFor({ timeout: T });
  await c.answer(0, 'allow_once');
  await c.waitStatus('Done');
  const [pageD, d] = await open(context, 'D', errors);
  await pageD.goto(resyncUrl);
  await d.by('session').filter({ hasText: 'Add a Makefile' }).click();
  await d.turn(0).getByTestId('msg-assistant').filter({ hasText: 'Run make to try it.' }).waitFor({ timeout: T });
  await d.hideCountingResyncs();
  await c.say('And a README');
  await c.turn(1).getByTestId('approval').waitFor({ timeout: T });
  await c.answer(1, 'deny');
  await c.waitStatus('Done');
  await d.show();
  await d.turn(1).getByTestId('msg-assistant').filter({ hasText: 'I left the workspace unchanged.' }).waitFor({ timeout: T });
  expect((await d.resyncs()) >= 1, 'the hidden tab got a declared resync');
  // Tab C answered the cards: tab D says so, and otherwise shows the same.
  const resynced = JSON.stringify(await d.transcript());
  expect(resynced.includes('in another window'), 'the resynced tab says the cards were answered in another window');
  expect(resynced.replaceAll(' in another window', '') === JSON.stringify(await c.transcript()), 'the resynced tab shows what the other shows');
  await step(pageD, 'resynced');

  // Refusals: a wrong token, a foreign Origin.
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
});
