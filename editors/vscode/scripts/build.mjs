// Bundles the extension (out/extension.js, `vscode` left to the host) and, with --tests, the
// unit tests (out/test/*.test.js, each with a fake of the VS Code API where it needs one).
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const common = { bundle: true, platform: 'node', target: 'node20', format: 'cjs', sourcemap: false, logLevel: 'warning' };

await build({ ...common, entryPoints: [join(root, 'src/extension.ts')], outfile: join(root, 'out/extension.js'), external: ['vscode'], minify: true });

if (process.argv.includes('--tests')) {
  const dir = join(root, 'test/unit');
  const entryPoints = readdirSync(dir).filter((f) => f.endsWith('.test.ts')).map((f) => join(dir, f));
  await build({ ...common, entryPoints, outdir: join(root, 'out/test'), alias: { vscode: join(dir, 'fake-vscode.ts') } });
}
