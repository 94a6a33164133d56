// `bbBridge.*` settings: to the sidecar as flags, to the page as `__APP_CONFIG__.settings`.
// The engine's password or token never goes through here: it lives in the secret storage and
// reaches the sidecar in its environment (`BB_ENGINE_SECRET`), named by a flag.

export type EngineKind = 'demo' | 'kilo' | 'breadboard' | 'acp';

export interface Settings {
  engine: EngineKind;
  engineBinary: string;
  engineUrl: string;
  engineConfig: string;
  acpCommand: string[];
  permissionTimeout: number;
  linger: number;
  sidecarPath: string;
}

/** The environment variable the secret is handed over in. */
export const SECRET_ENV = 'BB_ENGINE_SECRET';

/** Reads the settings through `get` (a `WorkspaceConfiguration.get`), with defaults. */
export function readSettings(get: <T>(key: string) => T | undefined): Settings {
  const str = (key: string) => {
    const v = get<string>(key);
    return typeof v === 'string' ? v.trim() : '';
  };
  const engine = str('engine');
  const num = (key: string, fallback: number) => {
    const v = get<number>(key);
    return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : fallback;
  };
  const acp = get<string[]>('acpCommand');
  return {
    engine: (['demo', 'kilo', 'breadboard', 'acp'].includes(engine) ? engine : 'demo') as EngineKind,
    engineBinary: str('engineBinary'),
    engineUrl: str('engineUrl'),
    engineConfig: str('engineConfig'),
    acpCommand: Array.isArray(acp) ? acp.filter((a) => typeof a === 'string') : [],
    permissionTimeout: num('permissionTimeout', 0),
    linger: Math.max(1, num('linger', 120)),
    sidecarPath: str('sidecarPath'),
  };
}

/** The sidecar's engine flags for these settings, the workspace folders and state dir;
 * `hasSecret`: a secret is in the environment. Every folder of a multi-root workspace is
 * served: the first is the workspace (the default folder of a new session), each other one a
 * `--folder`; a session works in one folder, chosen when it is created. */
export function sidecarArgs(s: Settings, folders: string[], stateDir: string, hasSecret: boolean): string[] {
  const args = ['--engine', s.engine, '--state-dir', stateDir];
  if (folders.length > 0) args.push('--workspace', folders[0]);
  for (const folder of folders.slice(1)) args.push('--folder', folder);
  if (s.engine === 'kilo') {
    if (s.engineUrl) {
      args.push('--engine-url', s.engineUrl);
      if (hasSecret) args.push('--engine-password-env', SECRET_ENV);
    } else if (s.engineBinary) {
      args.push('--engine-bin', s.engineBinary);
    }
    if (s.permissionTimeout > 0) args.push('--permission-timeout', String(Math.round(s.permissionTimeout)));
  }
  if (s.engine === 'breadboard') {
    if (s.engineUrl) args.push('--engine-url', s.engineUrl);
    if (s.engineUrl && hasSecret) args.push('--engine-token-env', SECRET_ENV);
    if (s.engineConfig) args.push('--engine-config', s.engineConfig);
  }
  if (s.engine === 'acp' && s.acpCommand.length > 0) args.push('--', ...s.acpCommand);
  return args;
}

/** What the page gets as `__APP_CONFIG__.settings`: the settings it may show (the paths of
 * binaries are the host's business). */
export function pageSettings(s: Settings): Record<string, unknown> {
  return { engine: s.engine, engineUrl: s.engineUrl, permissionTimeout: s.permissionTimeout, linger: s.linger };
}
