// `npm run package`: builds the release `bb-sidecar` (cargo, from the repository this folder
// is in), copies it to bin/ and the gateway's page (apps/gateway/page) to page/, bundles the
// extension and packages a platform .vsix with @vscode/vsce. Leaves exactly one .vsix in
// dist/. BB_SIDECAR_BIN=PATH packages that binary instead of building one.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = join(dirname(fileURLToPath(import.meta.url)), '..');
const repo = join(here, '..', '..');
const run = (cmd, args, cwd = here) => execFileSync(cmd, args, { cwd, stdio: 'inherit' });

const targets = { 'linux-x64': 'linux-x64', 'linux-arm64': 'linux-arm64', 'darwin-x64': 'darwin-x64', 'darwin-arm64': 'darwin-arm64' };
const target = targets[`${process.platform}-${process.arch}`];
if (!target) {
  console.error(`package: no bb-sidecar build for ${process.platform}-${process.arch} (the sidecar's socket mode is Unix-only)`);
  process.exit(1);
}

let sidecar = process.env.BB_SIDECAR_BIN;
if (!sidecar) {
  run('cargo', ['build', '--release', '--locked', '-p', 'bb-sidecar'], repo);
  sidecar = join(process.env.CARGO_TARGET_DIR ?? join(repo, 'target'), 'release', 'bb-sidecar');
}
rmSync(join(here, 'bin'), { recursive: true, force: true });
mkdirSync(join(here, 'bin'));
copyFileSync(sidecar, join(here, 'bin', 'bb-sidecar'));
chmodSync(join(here, 'bin', 'bb-sidecar'), 0o755);

// The page is the gateway's, copied at packaging time (never kept as a second source).
const page = join(repo, 'apps', 'gateway', 'page');
rmSync(join(here, 'page'), { recursive: true, force: true });
mkdirSync(join(here, 'page'));
for (const f of readdirSync(page)) {
  if (/\.(js|css|html)$/.test(f)) copyFileSync(join(page, f), join(here, 'page', f));
}

run(process.execPath, [join(here, 'scripts', 'build.mjs')]);
rmSync(join(here, 'dist'), { recursive: true, force: true });
mkdirSync(join(here, 'dist'));
const version = JSON.parse(execFileSync(process.execPath, ['-p', 'JSON.stringify(require("./package.json").version)'], { cwd: here, encoding: 'utf8' }));
const out = join(here, 'dist', `bb-bridge-${target}-${version}.vsix`);
run(process.execPath, [join(here, 'node_modules', '@vscode', 'vsce', 'vsce'), 'package', '--target', target, '--no-dependencies', '--skip-license', '--out', out]);
const made = readdirSync(join(here, 'dist')).filter((f) => f.endsWith('.vsix'));
if (made.length !== 1) {
  console.error(`package: expected one .vsix in dist/, found ${made.length}`);
  process.exit(1);
}
console.log(`package: ${out}`);
