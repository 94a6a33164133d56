// The webview's HTML: the gateway's own page (`page/index.html`, copied from
// apps/gateway/page when the extension is packaged) with its assets served from the
// extension's `page/` folder, a fresh nonce per load, a strict CSP and the page config.

import { randomBytes } from 'node:crypto';

export interface PageConfig {
  /** Which transport the page speaks: `vscode` (postMessage to the extension host). */
  transport: 'vscode';
  /** `bbBridge.*` settings the page may show. */
  settings: Record<string, unknown>;
}

/** `template` is index.html; `assetBase` the webview URI of the page folder; `cspSource`
 * the webview's own source expression. */
export function pageHtml(template: string, assetBase: string, cspSource: string, config: PageConfig, nonce = randomBytes(16).toString('hex')): string {
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}' 'strict-dynamic'`,
    `style-src 'nonce-${nonce}'`,
    `img-src ${cspSource} data:`,
    `font-src ${cspSource}`,
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
  // `<` escaped so no value can close the script element.
  const json = JSON.stringify(config).replace(/</g, '\\u003c');
  const base = assetBase.replace(/\/$/, '');
  return template
    .replace('<head>', `<head>\n<meta http-equiv="Content-Security-Policy" content="${csp}">`)
    .replaceAll('/assets/', `${base}/`)
    .replaceAll('{{NONCE}}', nonce)
    .replace('{{CONFIG}}', () => json);
}
