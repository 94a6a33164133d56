// The sidebar page on the real Kilo server (its mock LLM scripted by the prompts), in
// Debian's Chromium, step by step as a person uses it: a reply, a command allowed, a command
// denied, a stop, a question answered, a sub-agent's command allowed on the parent's tab, a
// reload, a second tab opening the session, a declared resync of a hidden tab.
// Usage: node kilo.mjs <page URL> <shots dir>

import { expect, open, run } from './lib.mjs';

const [url, outDir] = process.argv.slice(2);
if (!url || !outDir) {
  console.error('usage: node kilo.mjs <url> <screenshot dir>');
  process.exit(2);
}
// The engine answers slower than the demo (it starts, and runs real tools).
const T = 90_000;
await run(outDir, async ({ context, step, errors }) => {
  const [pageA, a] = await open(context, 'A', errors);
  await pageA.goto(url);
  await a.by('engine').filter({ hasText: 'Kilo · ready' }).waitFor({ timeout: T });
  await a.by('banner').waitFor({ state: 'hidden', timeout: T });
  await step(pageA, 'opened');
  const session = await a.newSession();

  // Turn 1: a reply.
  await a.say('Say hello MOCK:text:hello%20from%20the%20sidebar');
  await a.turn(0).getByTestId('msg-assistant').filter({ hasText: 'hello from the sidebar' }).waitFor({ timeout: T });
  await a.waitStatus('Done', T);
  await step(pageA, 'turn1-reply');

  // Turn 2: a command, allowed: the command and its output, then the reply.
  await a.say('Run it MOCK:bash:echo%20zebra77');
  await a.turn(1).getByTestId('approval-prompt').filter({ hasText: 'Run echo zebra77' }).waitFor({ timeout: T });
  await a.waitStatus('Waiting for your approval', T);
  await step(pageA, 'turn2-approval');
  await a.answer(1, 'allow_once');
  await a.turn(1).getByTestId('tool-command').filter({ hasText: '$ echo zebra77' }).waitFor({ timeout: T });
  await a.turn(1).getByTestId('tool-output').filter({ hasText: 'zebra77' }).waitFor({ timeout: T });
  await a.turn(1).getByTestId('msg-assistant').filter({ hasText: 'Tool result received: zebra77' }).waitFor({ timeout: T });
  await a.waitStatus('Done', T);
  expect((await a.turn(1).getByTestId('approval-state').textContent()) === 'Allowed once', 'the approval says it was allowed');
  expect(!(await a.turn(0).innerText()).includes('zebra77'), 'the first turn holds none of the second');
  await step(pageA, 'turn2-allowed');

  // Turn 3: a command, denied: it does not run.
  await a.say('Run it MOCK:bash:echo%20yak78');
  await a.turn(2).getByTestId('approval-prompt').filter({ hasText: 'Run echo yak78' }).waitFor({ timeout: T });
  await a.answer(2, 'deny');
  await a.turn(2).locator('[data-testid=tool][data-state=error]').waitFor({ timeout: T });
  await a.waitStatus('Done', T);
  expect((await a.turn(2).getByTestId('approval-state').textContent()) === 'Denied', 'the approval says it was denied');
  const outputs = await a.turn(2).getByTestId('tool-output').allInnerTexts();
  expect(!outputs.some((o) => /^yak78\s*$/m.test(o)), `the denied command did not run: ${JSON.stringify(outputs)}`);
  await step(pageA, 'turn3-denied');

  // Turn 4: stopped while it streams.
  await a.say('Keep going MOCK:slow');
  await a.turn(3).getByTestId('msg-assistant').first().waitFor({ timeout: T });
  await a.by('stop').and(pageA.locator(':enabled')).waitFor({ timeout: T });
  await a.by('stop').click();
  await a.turn(3).locator('[data-testid=status-card][data-level=stopped]').waitFor({ timeout: T });
  await a.waitStatus('Stopped', T);
  expect((await a.turns().count()) === 4, 'four turns, one per message');
  await step(pageA, 'turn4-stopped');

  // Turn 5: the agent asks a question; the card offers its answers, one is chosen.
  const question = encodeURIComponent(JSON.stringify({ questions: [{ question: 'Which color?', header: 'Color',
    options: [{ label: 'Red', description: 'warm' }, { label: 'Blue', description: 'cool' }] }] }));
  await a.say(`Ask me MOCK:tool:question:${question}`);
  await a.turn(4).getByTestId('approval-prompt').filter({ hasText: 'Which color?' }).waitFor({ timeout: T });
  await a.waitStatus('Waiting for your approval', T);
  await step(pageA, 'turn5-question');
  await a.turn(4).locator('[data-testid=approval-option][data-value=Blue]').click();
  await a.turn(4).getByTestId('answer').click();
  await a.turn(4).getByTestId('approval-state').filter({ hasText: 'Answered' }).waitFor({ timeout: T });
  await a.turn(4).getByTestId('msg-assistant').filter({ hasText: '"Which color?"="Blue"' }).waitFor({ timeout: T });
  await a.waitStatus('Done', T);
  await step(pageA, 'turn5-answered');

  // Turn 6: the agent hands the work to a sub-agent (Kilo's `task` tool: a child session no
  // tab shows); the child's command asks on this tab, under this turn, and is allowed here.
  const task = encodeURIComponent(JSON.stringify({ description: 'child work', subagent_type: 'general',
    prompt: 'Do the child work MOCK:bash:echo%20childran71' }));
  await a.say(`Delegate it MOCK:tool:task:${task}`);
  await a.turn(5).getByTestId('approval-prompt').filter({ hasText: 'Run echo childran71' }).waitFor({ timeout: T });
  await a.waitStatus('Waiting for your approval', T);
  await step(pageA, 'turn6-sub-agent-approval');
  await a.answer(5, 'allow_once');
  // Settled by the child's own reply, shown here too.
  await a.turn(5).getByTestId('approval-state').filter({ hasText: 'Allowed once' }).waitFor({ timeout: T });
  await a.waitStatus('Done', T);
  await a.turn(5).filter({ hasText: 'childran71' }).locator('[data-testid=msg-assistant]').last().waitFor({ timeout: T });
  expect((await a.turns().count()) === 6, 'six turns: the sub-agent made none of its own here');
  await step(pageA, 'turn6-sub-agent-done');
  const before = await a.transcript();

  // Reload: the same six turns (the gateway keeps a four-message ring: rebuilt by a resync).
  await pageA.reload();
  await a.turn(5).getByTestId('approval-state').filter({ hasText: 'Allowed once' }).waitFor({ timeout: T });
  await a.turn(4).getByTestId('approval-state').filter({ hasText: 'Answered' }).waitFor({ timeout: T });
  expect(JSON.stringify(await a.transcript()) === JSON.stringify(before), 'the reloaded page shows the same turns');
  expect((await pageA.locator('[data-testid=session][aria-current=true]').getAttribute('data-session-id')) === session, 'the same session');
  await step(pageA, 'reloaded');

  // A second tab opens the session.
  const [pageB, b] = await open(context, 'B', errors);
  await pageB.goto(url);
  await pageB.locator(`[data-testid=session][data-session-id="${session}"]`).click();
  await b.turn(4).getByTestId('approval-state').filter({ hasText: 'Answered' }).waitFor({ timeout: T });
  // The cards were answered in tab A: tab B says so, and otherwise shows the same turns.
  const seenByB = JSON.stringify(await b.transcript());
  expect(seenByB.includes('in another window'), 'the second tab says the cards were answered in another window');
  expect(seenByB.replaceAll(' in another window', '') === JSON.stringify(before), 'the second tab shows the same turns');
  await step(pageB, 'second-tab');

  // A declared resync: the second tab, hidden while a turn streams past its ring, is rebuilt.
  await b.hideCountingResyncs();
  await a.say('Tell me more MOCK:text:one%20two%20three%20four%20five%20six%20seven%20eight%20nine%20ten%20eleven%20twelve%20thirteen%20fourteen%20fifteen');
  await a.turn(6).getByTestId('msg-assistant').filter({ hasText: 'fifteen' }).waitFor({ timeout: T });
  await a.waitStatus('Done', T);
  await b.show();
  await b.turn(6).getByTestId('msg-assistant').filter({ hasText: 'fifteen' }).waitFor({ timeout: T });
  expect((await b.resyncs()) >= 1, 'the hidden tab got a declared resync');
  const resynced = JSON.stringify(await b.transcript()).replaceAll(' in another window', '');
  expect(resynced === JSON.stringify(await a.transcript()), 'the resynced tab shows what the other shows');
  await step(pageB, 'resynced');
});
