// The pure pieces: settings to flags (no secret in argv), the page's HTML and CSP, workspace
// containment, the two sides of a diff, the socket path.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';

import { diffSides } from '../../src/diff';
import { pageHtml } from '../../src/html';
import { containedPath, sameFolder } from '../../src/paths';
import { SECRET_ENV, pageSettings, readSettings, sidecarArgs } from '../../src/settings';
import { Sidecar, socketPathFor } from '../../src/sidecar';

const settings = (values: Record<string, unknown>) => readSettings(<T>(k: string) => values[k] as T | undefined);

test('settings become flags; a secret is only named', () => {
  const kilo = settings({ engine: 'kilo', engineUrl: 'http://127.0.0.1:4096', permissionTimeout: 30 });
  assert.deepEqual(sidecarArgs(kilo, ['/w/a'], '/s', true), [
    '--engine', 'kilo', '--state-dir', '/s', '--workspace', '/w/a',
    '--engine-url', 'http://127.0.0.1:4096', '--engine-password-env', SECRET_ENV, '--permission-timeout', '30',
  ]);
  // A multi-root workspace: the first folder is the workspace, every other one a --folder.
  const demo = settings({});
  assert.deepEqual(sidecarArgs(demo, ['/w/a', '/w/b', '/w/c'], '/s', false), [
    '--engine', 'demo', '--state-dir', '/s', '--workspace', '/w/a', '--folder', '/w/b', '--folder', '/w/c',
  ]);
  assert.deepEqual(sidecarArgs(demo, [], '/s', false), ['--engine', 'demo', '--state-dir', '/s']);
  const acp = settings({ engine: 'acp', acpCommand: ['kilo', 'acp'] });
  assert.deepEqual(sidecarArgs(acp, ['/w/a'], '/s', false).slice(-3), ['--', 'kilo', 'acp']);
  assert.equal(settings({ engine: 'nonsense' }).engine, 'demo');
  assert.deepEqual(Object.keys(pageSettings(kilo)).sort(), ['engine', 'engineUrl', 'linger', 'permissionTimeout']);
});

test('the page HTML: one nonce on every script and style, a strict CSP, the config escaped', () => {
  const template = fs.readFileSync(path.join(__dirname, '..', '..', '..', '..', 'apps', 'gateway', 'page', 'index.html'), 'utf8');
  const html = pageHtml(template, 'https://webview/page/', 'https://webview', { transport: 'vscode', settings: { x: '</script><script>alert(1)' } }, 'abc123');
  assert.match(html, /<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'nonce-abc123' 'strict-dynamic'; style-src 'nonce-abc123';/);
  assert.ok(html.includes('src="https://webview/page/app.js"') && html.includes('href="https://webview/page/style.css"'));
  assert.ok(!html.includes('/assets/') && !html.includes('{{'));
  assert.ok(!html.includes('</script><script>alert'), 'a value cannot close the script element');
  for (const tag of html.match(/<(script|link)[^>]*>/g) ?? []) assert.ok(tag.includes('nonce="abc123"'), tag);
  assert.ok(!/https?:\/\/(?!webview)/.test(html), 'no remote resources');
});

test('containment: inside the folders only, symlinks resolved', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bb-contain-'));
  const ws = path.join(root, 'ws');
  fs.mkdirSync(path.join(ws, 'src'), { recursive: true });
  fs.writeFileSync(path.join(ws, 'src', 'a.c'), '');
  fs.symlinkSync(os.tmpdir(), path.join(ws, 'escape'));
  const real = fs.realpathSync(ws);
  assert.equal(containedPath('src/a.c', [ws]), path.join(real, 'src', 'a.c'));
  assert.equal(containedPath(path.join(ws, 'new', 'file.txt'), [ws]), path.join(real, 'new', 'file.txt'));
  assert.equal(containedPath('../ws2/x', [ws]), null);
  assert.equal(containedPath('/etc/passwd', [ws]), null);
  assert.equal(containedPath('escape/x', [ws]), null, 'a symlink out of the workspace');
  assert.equal(containedPath('a\0b', [ws]), null);
  assert.ok(sameFolder(ws, real) && !sameFolder(ws, root), 'one folder, symlinks resolved');
  fs.rmSync(root, { recursive: true, force: true });
});

test('diff sides: from the current file when it matches, else from the hunks', () => {
  const patch = '--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n';
  assert.deepEqual(diffSides(patch, 'zero\none\nTWO\nthree\nfour\n'), { before: 'zero\none\ntwo\nthree\nfour\n', after: 'zero\none\nTWO\nthree\nfour\n', whole: true });
  assert.deepEqual(diffSides(patch, 'moved on\n'), { before: 'one\ntwo\nthree\n', after: 'one\nTWO\nthree\n', whole: false });
  const created = 'new file mode 100644\n--- /dev/null\n+++ b/M\n@@ -0,0 +1,2 @@\n+a\n+b\n';
  assert.deepEqual(diffSides(created, null), { before: '', after: 'a\nb\n', whole: false });
  assert.deepEqual(diffSides(created, 'a\nb\n'), { before: '', after: 'a\nb\n', whole: true });
});

test('the socket path fits the platform limit, one per state directory', () => {
  assert.equal(socketPathFor('/short/state'), '/short/state/bridge.sock');
  const long = `/${'x'.repeat(120)}/state`;
  const a = socketPathFor(long, { XDG_RUNTIME_DIR: '' });
  assert.ok(Buffer.byteLength(a) <= 100, a);
  assert.equal(a, socketPathFor(long, { XDG_RUNTIME_DIR: '' }));
  assert.notEqual(a, socketPathFor(`${long}2`, { XDG_RUNTIME_DIR: '' }));
});

/** A stand-in sidecar: a shell script that counts its starts, says `said` on stdout and
 * `why` on stderr, then exits 1 (never listening). */
function failingSidecar(root: string, said: string, why: string): { binary: string; starts: () => number } {
  const count = path.join(root, 'starts');
  const binary = path.join(root, 'sidecar.sh');
  fs.writeFileSync(binary, `#!/bin/sh\necho x >> '${count}'\n${said ? `echo '${said}'\n` : ''}echo '${why}' >&2\nexit 1\n`, { mode: 0o755 });
  return { binary, starts: () => (fs.existsSync(count) ? fs.readFileSync(count, 'utf8').split('\n').filter(Boolean).length : 0) };
}

test('a sidecar that cannot start is reported with its error, not started again and again', async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bb-sidecar-'));
  try {
    const options = (binary: string) => ({ binary, args: [], linger: 1, env: {}, cwd: root, socketPath: path.join(root, 'bridge.sock'), logPath: path.join(root, 'sidecar.log') });
    // It exits before it listens (a set-up error): one start, its error in the rejection.
    const early = failingSidecar(root, '', 'Error: the engine executable kilo was not found');
    await assert.rejects(new Sidecar(options(early.binary)).connect(), /exited \(code 1\) before listening: .*kilo was not found/);
    assert.equal(early.starts(), 1);
    // It says it listens, then exits: at most two starts for one connect (the caller's
    // back-off paces the next), the log's tail in the rejection.
    fs.rmSync(path.join(root, 'starts'));
    const late = failingSidecar(root, `listening on ${path.join(root, 'bridge.sock')}`, 'Error: gone at once');
    await assert.rejects(new Sidecar(options(late.binary)).connect(), /cannot be reached .*gone at once/);
    assert.equal(late.starts(), 2);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});
