// Paged attach on the demo engine, in Debian's Chromium: a gateway that sends one turn per
// resync and per history page (`--test-history-turns 1`). Tab A plays three turns, the last
// left waiting for its approval; tab B opens the session and sees only the last turn with its
// pending card and "Show earlier (2 turns)"; each click fetches one older turn (`bb.history`)
// and puts it above, until B shows what A shows; B then answers the pending card.
// Usage: node history.mjs <page URL> <shots dir>

import { T, expect, open, run } from './lib.mjs';

const [url, outDir] = process.argv.slice(2);
if (!url || !outDir) {
  console.error('usage: node history.mjs <url> <screenshot dir>');
  process.exit(2);
}
await run(outDir, async ({ context, step, errors }) => {
  const [pageA, a] = await open(context, 'A', errors);
  await pageA.goto(url);
  await a.by('engine').filter({ hasText: 'ready' }).waitFor({ timeout: T });
  await a.newSession();
  const prompts = ['First: add a Makefile', 'Second: with debug flags', 'Third: once more'];
  for (const [i, text] of prompts.entries()) {
    await a.say(text);
    await a.turn(i).getByTestId('approval-prompt').filter({ hasText: 'Edit Makefile' }).waitFor({ timeout: T });
    await a.waitStatus('Waiting for your approval');
    if (i < 2) {
      await a.answer(i, 'deny');
      await a.waitStatus('Done');
    }
  }
  expect((await a.turns().count()) === 3, 'tab A shows three turns');
  expect(await a.by('show-earlier').isHidden(), 'tab A saw every turn live: nothing to fetch');
  const seenByA = await a.transcript();
  await step(pageA, 'three-turns-one-waiting');

  // Tab B opens the session: the last turn, its card pending, and the older two left out.
  const [pageB, b] = await open(context, 'B', errors);
  await pageB.goto(url);
  await b.by('session').filter({ hasText: 'First: add a Makefile' }).click();
  await b.turn(0).locator('[data-testid=approval][data-resolved=false]').waitFor({ timeout: T });
  expect((await b.turns().count()) === 1, 'tab B is sent the last turn only');
  expect((await b.turn(0).getByTestId('msg-user').textContent()).includes('Third: once more'), 'the last turn is the third');
  await b.by('show-earlier').filter({ hasText: 'Show earlier (2 turns)' }).waitFor({ timeout: T });
  await step(pageB, 'attached-last-turn');

  // Each click puts one older turn above; the button counts down and goes.
  await b.by('show-earlier').click();
  await b.by('show-earlier').filter({ hasText: 'Show earlier (1 turn)' }).waitFor({ timeout: T });
  expect((await b.turns().count()) === 2, 'one older turn fetched');
  expect((await b.turn(0).getByTestId('msg-user').textContent()).includes('Second'), 'the second turn goes above the third');
  await step(pageB, 'one-page-back');
  await b.by('show-earlier').click();
  await b.by('show-earlier').waitFor({ state: 'hidden', timeout: T });
  expect((await b.turns().count()) === 3, 'every turn fetched');
  const seenByB = JSON.stringify(await b.transcript());
  expect(seenByB.replaceAll(' in another window', '') === JSON.stringify(seenByA),
    `tab B shows what tab A shows:\n${seenByB}\n${JSON.stringify(seenByA)}`);
  await step(pageB, 'whole-history');

  // The pending card of the attached turn still works from tab B; tab A sees it answered.
  await b.answer(2, 'deny');
  await a.turn(2).getByTestId('approval-state').waitFor({ timeout: T });
  await a.waitStatus('Done');
  await step(pageA, 'answered-from-the-late-tab');
});
