// The extension: a sidebar webview view showing the gateway's page, relayed to the
// workspace's `bb-sidecar --listen` (shared by the workspace's windows, outliving a reload
// by its linger). It owns only what needs the VS Code API: visibility, workspace trust,
// settings and secrets, IDE actions, diagnostics.

import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';

import { pageHtml } from './html';
import { DIFF_SCHEME, DiffDocuments, Ide, openDiff } from './ide';
import { type Json, Relay } from './relay';
import { SECRET_ENV, pageSettings, readSettings, sidecarArgs } from './settings';
import { LogTail, Sidecar, type SidecarOptions, socketPathFor } from './sidecar';

const SECRET_KEY = 'bbBridge.engineSecret';

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('bb-bridge');
  const status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  status.name = 'bb-bridge';
  status.command = 'bbBridge.showLogs';
  setStatus(status, 'sync~spin', 'starting', 'The bridge is starting');
  status.show();

  const stateDir = (context.storageUri ?? context.globalStorageUri).fsPath;
  fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const logPath = path.join(stateDir, 'sidecar.log');
  const tail = new LogTail(logPath, (text) => output.append(text));
  tail.start();

  const options = async (): Promise<SidecarOptions> => {
    const settings = readSettings((key) => vscode.workspace.getConfiguration('bbBridge').get(key));
    const secret = await context.secrets.get(SECRET_KEY);
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env[SECRET_ENV];
    if (secret) env[SECRET_ENV] = secret;
    return {
      binary: settings.sidecarPath || path.join(context.extensionPath, 'bin', process.platform === 'win32' ? 'bb-sidecar.exe' : 'bb-sidecar'),
      args: sidecarArgs(settings, folders, path.join(stateDir, 'engine'), Boolean(secret)),
      linger: settings.linger,
      env,
      cwd: folders[0] ?? stateDir,
      socketPath: socketPathFor(stateDir),
      logPath,
      log: (line) => output.appendLine(`[extension] ${line}`),
    };
  };
  const sidecar = new Sidecar(await options());
  const docs = new DiffDocuments();
  const ide = new Ide();
  const relays = new Set<Relay>();
  const template = fs.readFileSync(path.join(context.extensionPath, 'page', 'index.html'), 'utf8');
  const pageRoot = vscode.Uri.joinPath(context.extensionUri, 'page');

  const provider: vscode.WebviewViewProvider = {
    resolveWebviewView(view) {
      view.webview.options = { enableScripts: true, localResourceRoots: [pageRoot] };
      const settings = readSettings((key) => vscode.workspace.getConfiguration('bbBridge').get(key));
      view.webview.html = pageHtml(template, view.webview.asWebviewUri(pageRoot).toString(), view.webview.cspSource, {
        transport: 'vscode',
        settings: pageSettings(settings),
      });
      const relay = new Relay({
        port: {
          post: (message: Json) => {
            if (message.type === 'bb-link') linkStatus(status, message);
            void view.webview.postMessage(message);
          },
        },
        connector: sidecar,
        ide,
        trusted: () => vscode.workspace.isTrusted,
        visible: view.visible,
        onConnection: (payload) => engineStatus(status, payload),
        onDiff: (diff) => {
          openDiff(docs, diff).catch((err: Error) => output.appendLine(`[extension] opening the diff failed: ${err.message}`));
        },
        log: (line) => output.appendLine(`[extension] ${line}`),
      });
      relays.add(relay);
      view.webview.onDidReceiveMessage((m) => relay.fromWebview(m));
      view.onDidChangeVisibility(() => relay.setVisible(view.visible));
      view.onDidDispose(() => {
        relay.dispose();
        relays.delete(relay);
      });
    },
  };

  const restart = async () => {
    const relay = relays.values().next().value as Relay | undefined;
    if (relay) {
      try {
        const res = await relay.request('bb.command', { sessionId: '', command: 'engine.restart' });
        if (res.ok === true) {
          output.appendLine('[extension] the engine is restarting');
          return;
        }
        output.appendLine(`[extension] engine.restart: ${(res.error as Json | undefined)?.message ?? 'refused'}; restarting the bridge instead`);
      } catch (err) {
        output.appendLine(`[extension] engine.restart: ${(err as Error).message}; restarting the bridge instead`);
      }
    }
    // The engine was not started by the bridge (demo, attached): restart the bridge itself;
    // the views reconnect and start a new one.
    sidecar.update(await options());
    await sidecar.stop();
  };

  context.subscriptions.push(
    output,
    status,
    { dispose: () => tail.dispose() },
    { dispose: () => relays.forEach((r) => r.dispose()) },
    vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, docs),
    vscode.window.registerWebviewViewProvider('bbBridge.chat', provider, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.commands.registerCommand('bbBridge.showLogs', () => output.show(true)),
    vscode.commands.registerCommand('bbBridge.restartEngine', () =>
      restart().catch((err: Error) => void vscode.window.showErrorMessage(`bb-bridge: restart failed: ${err.message}`)),
    ),
    vscode.commands.registerCommand('bbBridge.setEngineSecret', async () => {
      const value = await vscode.window.showInputBox({ prompt: 'The engine password or token (kept in the secret storage; the bridge restarts to use it)', password: true, ignoreFocusOut: true });
      if (!value) return;
      await context.secrets.store(SECRET_KEY, value);
      await restart();
    }),
    vscode.commands.registerCommand('bbBridge.clearEngineSecret', async () => {
      await context.secrets.delete(SECRET_KEY);
      await restart();
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => relays.forEach((r) => r.trustGranted())),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (!e.affectsConfiguration('bbBridge')) return;
      sidecar.update(await options());
      const choice = await vscode.window.showInformationMessage('bb-bridge settings changed: restart the bridge to use them?', 'Restart');
      if (choice === 'Restart') await restart();
    }),
  );
}

export function deactivate(): void {}

function setStatus(item: vscode.StatusBarItem, icon: string, text: string, tooltip: string): void {
  item.text = `$(${icon}) bb-bridge: ${text}`;
  item.tooltip = `${tooltip}\nClick for the logs.`;
}

function engineStatus(item: vscode.StatusBarItem, payload: Json): void {
  switch (payload.status) {
    case 'connected':
      setStatus(item, 'check', 'engine ready', 'The engine is connected');
      break;
    case 'connecting':
      setStatus(item, 'sync~spin', 'engine connecting', `The engine is connecting${payload.retryCount ? ` (retry ${payload.retryCount})` : ''}`);
      break;
    default:
      setStatus(item, 'error', 'engine error', `The engine is unavailable: ${payload.lastError ?? 'unknown error'}`);
  }
}

function linkStatus(item: vscode.StatusBarItem, message: Json): void {
  if (message.state === 'closed') setStatus(item, 'debug-disconnect', 'bridge not connected', `The bridge connection closed: ${message.reason ?? ''}; reconnecting`);
  else if (message.state === 'connecting') setStatus(item, 'sync~spin', 'connecting', 'Connecting to the bridge');
}
