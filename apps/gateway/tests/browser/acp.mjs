// The sidebar page on an ACP agent through bb-gateway --engine acp, in Debian's Chromium, as a
// person uses it: the model and mode pickers (a model picked, kept for the next session), the
// prompt box's `/` menu (listed, filtered, picked with the keyboard, closed with Escape, a
// command sent), usage and the plan shown, a form of several questions answered at once, and a
// tab closed (nothing of its session reaches the page afterwards).
// Usage: node acp.mjs <page URL> <shots dir> capable|kilo
// `capable`: fixtures/acp/capable_agent.py (every step); `kilo`: the real `kilo acp` on the
// mock LLM (pickers, a model switch seen in the usage, the `/` menu listed, a tab closed).

import { expect, open, run, T } from './lib.mjs';

const [url, outDir, agent] = process.argv.slice(2);
if (!url || !outDir || !['capable', 'kilo'].includes(agent)) {
  console.error('usage: node acp.mjs <url> <screenshot dir> capable|kilo');
  process.exit(2);
}
const LONG = agent === 'kilo' ? 90_000 : T;

await run(outDir, async ({ context, step, errors }) => {
  const [page, p] = await open(context, agent, errors);
  await page.goto(url);
  await p.by('engine').filter({ hasText: 'ACP agent · ready' }).waitFor({ timeout: LONG });
  await p.by('banner').waitFor({ state: 'hidden', timeout: LONG });
  expect(await p.by('pickers').isHidden(), 'no settings bar before a session is open');
  const session = await p.newSession();

  // The pickers: one per setting the agent offers, the current value selected.
  const model = page.locator('[data-testid=picker][data-category=model]');
  await model.waitFor({ timeout: LONG });
  const before = await model.inputValue();
  const choices = await model.locator('option').evaluateAll((os) => os.map((o) => o.value));
  expect(choices.length >= 2 && choices.includes(before), `the model picker lists the models, ${before} selected: ${choices}`);
  expect(await page.locator('[data-testid=picker][data-category=mode]').count() === 1, 'a mode picker');
  expect(await model.getAttribute('aria-label') !== null, 'the picker is labelled');
  const other = choices.find((c) => c !== before);
  await model.selectOption(other);
  // The agent's answer moves the picker (the run update), not the click alone.
  await page.waitForFunction((v) => window.__bb.store.chats.get(window.__bb.store.activeSessionId)?.run?.configOptions?.some((o) => o.category === 'model' && o.value === v), other, { timeout: LONG });
  // The view renders on the next animation frame after the store moved: wait for it.
  const shown = await page.waitForFunction((v) => document.querySelector('[data-testid=picker][data-category=model]')?.value === v, other, { timeout: T })
    .then(() => true, () => false);
  expect(shown, `the model picker shows ${other} (it shows ${await model.inputValue()})`);
  await step(page, 'model-picked');

  // The `/` menu: opened by `/`, filtered, closed by Escape, picked with the keyboard.
  const menu = p.by('slash-menu');
  await p.by('composer').fill('');
  await p.by('composer').pressSequentially('/');
  await menu.waitFor({ timeout: LONG });
  const names = await menu.locator('[role=option]').evaluateAll((os) => os.map((o) => o.dataset.name));
  expect(names.length > 0, 'the menu lists the agent\'s commands');
  expect(await p.by('composer').getAttribute('aria-expanded') === 'true', 'the prompt box says its list is open');
  await step(page, 'slash-menu');
  await p.by('composer').press('Escape');
  await menu.waitFor({ state: 'hidden', timeout: T });
  expect(await p.by('composer').inputValue() === '/', 'Escape closes the menu and keeps the text');

  if (agent === 'kilo') {
    expect(names.includes('init'), `Kilo's commands: ${names}`);
    // A turn on the model picked: the other model's context window in the usage line.
    await p.say('Say hi MOCK:text:on%20the%20other%20model');
    await p.turn(0).getByTestId('msg-assistant').filter({ hasText: 'on the other model' }).waitFor({ timeout: LONG });
    await p.by('usage').filter({ hasText: '/ 64k tokens' }).waitFor({ timeout: LONG });
    await step(page, 'usage-on-the-picked-model');
  } else {
    await p.by('composer').pressSequentially('re');
    const filtered = await menu.locator('[role=option]').evaluateAll((os) => os.map((o) => o.dataset.name));
    expect(filtered[0] === 'review' && !filtered.includes('init'), `filtered by what was typed: ${filtered}`);
    await p.by('composer').press('Tab');
    expect(await p.by('composer').inputValue() === '/review ', 'Tab completes the command');
    await p.by('composer').pressSequentially('/');
    await p.by('composer').fill('/');
    await p.by('composer').press('ArrowDown');
    const active = await menu.locator('[aria-selected=true]').getAttribute('data-name');
    expect(active === names[1], `ArrowDown moves to the second command: ${active}`);
    await p.by('composer').press('ArrowUp');
    await p.by('composer').press('Enter');
    await p.by('composer').pressSequentially('the diff');
    await p.by('composer').press('Enter');
    await p.turn(0).getByTestId('msg-assistant').filter({ hasText: 'capable reply' }).waitFor({ timeout: LONG });
    expect((await p.turn(0).getByTestId('msg-user').innerText()).includes('/review the diff'), 'the command shows as the prompt');
    await step(page, 'command-sent');

    // Usage and the plan.
    await p.say('FAKE:usage FAKE:plan');
    await p.by('usage').filter({ hasText: '1.2k / 64k tokens (2 %) · 0.25 USD' }).waitFor({ timeout: LONG });
    await p.by('tasks-drawer').locator('summary').click();
    const plan = await p.by('tasks').innerText();
    expect(plan.includes('read the code') && plan.includes('fix the bug'), `the plan in the tasks lane: ${plan}`);
    await step(page, 'usage-and-plan');

    // A form of several questions: one card, answered at once.
    await p.say('FAKE:elicit-all');
    const card = p.turn(2).locator('[data-testid=approval][data-resolved=false]');
    await card.getByTestId('question-form').waitFor({ timeout: LONG });
    expect(await card.getByTestId('question').count() === 7, 'a question per field');
    await card.getByTestId('answer').click();
    await card.getByTestId('approval-error').filter({ hasText: 'Fill in How many copies, Name first.' }).waitFor({ timeout: T });
    await card.locator('[data-field=name] input, input[data-field=name]').fill('Ada');
    await card.locator('input[data-field=count]').fill('3');
    await card.locator('[data-field=color] [data-value=blue]').click();
    await card.locator('[data-field=tags] [data-value=a]').click();
    await card.locator('[data-field=tags] [data-value=b]').click();
    await card.locator('input[data-field=ok]').check();
    expect(await card.locator('input[data-field=name]').inputValue() === 'Ada', 'what was typed stays while options are picked');
    await step(page, 'form-filled');
    await card.getByTestId('answer').click();
    await p.turn(2).getByTestId('msg-assistant')
      .filter({ hasText: 'elicitation accept {"color": "blue", "count": 3, "name": "Ada", "ok": true, "tags": ["a", "b"]}' })
      .waitFor({ timeout: LONG });
    await step(page, 'form-answered');
  }

  // A second session starts with the model picked (remembered for the workspace).
  await p.by('composer').fill('');
  await p.by('new-session').click();
  await page.locator(`[data-testid=session][aria-current=true]:not([data-session-id="${session}"])`).waitFor({ timeout: LONG });
  const second = await page.locator('[data-testid=session][aria-current=true]').getAttribute('data-session-id');
  await page.locator(`[data-testid=picker][data-category=model] option[value="${other}"]`).waitFor({ state: 'attached', timeout: LONG });
  await page.waitForFunction((v) => document.querySelector('[data-testid=picker][data-category=model]')?.value === v, other, { timeout: LONG });

  // Closing the tab: the session is closed and nothing of it reaches the page afterwards.
  await page.evaluate((closed) => {
    window.__after = [];
    const handle = window.__bb.rpc.onEvent;
    window.__bb.rpc.onEvent = (name, payload) => {
      if (name === 'bb/events' && payload.sessionId === closed) window.__after.push(JSON.stringify(payload));
      handle(name, payload);
    };
  }, second);
  await p.by('close-session').click();
  await p.by('empty').filter({ hasText: 'No session open.' }).waitFor({ timeout: T });
  await page.locator(`[data-testid=session][data-session-id="${second}"] [data-testid=session-status]`).filter({ hasText: 'closed' }).waitFor({ timeout: LONG });
  // The capable agent sends one late update after `session/close`; give it time to arrive.
  await page.waitForTimeout(1500);
  const after = await page.evaluate(() => window.__after);
  expect(!after.some((m) => m.includes('late after close')), `no late update of the closed session: ${after}`);
  expect(after.every((m) => !JSON.parse(m).updates?.some((u) => u.kind === 'assistantMessage' || u.kind === 'assistantDelta')), `no text of the closed session: ${after}`);
  expect(!(await page.getByTestId('transcript').innerText()).includes('late after close'), 'the page shows nothing of it');
  await step(page, 'tab-closed');
  console.log(`closed ${second}`);
});
