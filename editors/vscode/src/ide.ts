// The IDE's side of the page's platform methods and of `bb.openDiff`, through the VS Code
// API, all contained to the workspace folders: `shell.openPath` opens a file in an editor
// (a folder: revealed in the Explorer), `dialog.open` shows VS Code's open dialog and
// returns the picked paths, and a diff the bridge sent opens in VS Code's diff editor.

import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';

import { diffSides } from './diff';
import { containedPath, sameFolder } from './paths';
import type { IdeMethods, Json } from './relay';

export const DIFF_SCHEME = 'bb-bridge-diff';

const outside = (p: string) => Object.assign(new Error(`${p} is outside the workspace; only files inside it can be opened`), { code: 'path_outside_workspace' });

function folders(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
}

export class Ide implements IdeMethods {
  has(method: string): boolean {
    return method === 'shell.openPath' || method === 'dialog.open';
  }

  async call(method: string, params: Json): Promise<unknown> {
    if (method === 'shell.openPath') {
      const asked = String(params.path ?? '');
      const file = containedPath(asked, folders());
      if (!file) throw outside(asked);
      const uri = vscode.Uri.file(file);
      if (fs.existsSync(file) && fs.statSync(file).isDirectory()) {
        await vscode.commands.executeCommand('revealInExplorer', uri);
      } else {
        await vscode.commands.executeCommand('vscode.open', uri);
      }
      return null;
    }
    const roots = folders();
    const filters: Record<string, string[]> = {};
    if (Array.isArray(params.filters)) {
      for (const f of params.filters as { name?: string; extensions?: string[] }[]) {
        if (f?.name && Array.isArray(f.extensions)) filters[f.name] = f.extensions;
      }
    }
    const start = typeof params.defaultPath === 'string' ? containedPath(params.defaultPath, roots) : null;
    const picked = await vscode.window.showOpenDialog({
      canSelectFiles: params.directory !== true,
      canSelectFolders: params.directory === true,
      canSelectMany: params.multiple === true,
      title: typeof params.title === 'string' ? params.title : undefined,
      defaultUri: start ? vscode.Uri.file(start) : roots[0] ? vscode.Uri.file(roots[0]) : undefined,
      filters: Object.keys(filters).length > 0 ? filters : undefined,
    });
    if (!picked || picked.length === 0) return null;
    const paths = picked.map((u) => {
      const inside = containedPath(u.fsPath, roots);
      if (!inside) throw outside(u.fsPath);
      return inside;
    });
    return params.multiple === true ? paths : paths[0];
  }
}

/** The texts behind the diff editor's virtual sides. */
export class DiffDocuments implements vscode.TextDocumentContentProvider {
  private texts = new Map<string, string>();
  private counter = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  add(name: string, side: string, text: string): vscode.Uri {
    this.counter += 1;
    const uri = vscode.Uri.from({ scheme: DIFF_SCHEME, path: `/${side}/${name}`, query: String(this.counter) });
    this.texts.set(uri.toString(), text);
    // Bounded: the last 64 sides.
    if (this.texts.size > 64) this.texts.delete(this.texts.keys().next().value as string);
    return uri;
  }
}

/** Opens the diff the bridge sent in VS Code's diff editor; its file is contained in its
 * session's folder when the bridge said which (a multi-root workspace), else in the workspace. */
export async function openDiff(docs: DiffDocuments, diff: { path: string; patch: string; folder?: string }): Promise<void> {
  const all = folders();
  const own = diff.folder === undefined ? [] : all.filter((f) => sameFolder(f, diff.folder as string));
  const file = containedPath(diff.path, own.length > 0 ? own : all);
  const current = file && fs.existsSync(file) && fs.statSync(file).isFile() ? fs.readFileSync(file, 'utf8') : null;
  const sides = diffSides(diff.patch, current);
  const name = path.basename(diff.path) || 'file';
  const left = docs.add(name, 'before', sides.before);
  const right = sides.whole && file ? vscode.Uri.file(file) : docs.add(name, 'after', sides.after);
  await vscode.commands.executeCommand('vscode.diff', left, right, `${name} (agent's change)`);
}
