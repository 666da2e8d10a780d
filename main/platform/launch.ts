import { existsSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * How an MCP client starts `lightworker mcp`. The one place that knows both layouts:
 *
 * - source checkout: `node <checkout>/bin/lightworker.js mcp`
 * - packaged app:    `ELECTRON_RUN_AS_NODE=1 <app binary> <resources>/app.asar/out/main/cli.js mcp`
 *   (electron-builder puts the app bundle at `<resources>/app.asar`; the CLI entry is built to
 *   `out/main/cli.js` inside it; the app binary runs as plain Node with ELECTRON_RUN_AS_NODE=1).
 */
export const PACKAGED_CLI = ['app.asar', 'out', 'main', 'cli.js'] as const;

/** Default install locations of the packaged app (electron-builder defaults, productName LightWorker). */
export const DEFAULT_INSTALLS: Record<string, { binary: string; resources: string }> = {
  darwin: { binary: '/Applications/LightWorker.app/Contents/MacOS/LightWorker', resources: '/Applications/LightWorker.app/Contents/Resources' },
  linux: { binary: '/opt/LightWorker/lightworker', resources: '/opt/LightWorker/resources' },
  win32: {
    binary: join(process.env.LOCALAPPDATA ?? 'C:\\Users\\<you>\\AppData\\Local', 'Programs', 'LightWorker', 'LightWorker.exe'),
    resources: join(process.env.LOCALAPPDATA ?? 'C:\\Users\\<you>\\AppData\\Local', 'Programs', 'LightWorker', 'resources'),
  },
};

export type LaunchKind = 'source' | 'packaged';

export interface Launch {
  kind: LaunchKind;
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Said when the paths were assumed rather than found. */
  note: string | null;
}

/** Where this module runs from: inside an app.asar bundle, or a checkout. */
function here(): string {
  return fileURLToPath(import.meta.url);
}

export function runningPackaged(): boolean {
  return here().includes(`${sep}app.asar${sep}`);
}

/** The command line for `lightworker mcp` in the layout asked for ('auto': the one running now). */
export function mcpLaunch(kind: LaunchKind | 'auto' = 'auto'): Launch {
  const packaged = kind === 'packaged' || (kind === 'auto' && runningPackaged());
  if (!packaged) {
    const checkout = join(dirname(here()), '..', '..');
    const bin = join(checkout, 'bin', 'lightworker.js');
    // Under plain Node our own binary is the safest choice (version managers); under Electron it is not Node.
    const node = process.versions.electron ? 'node' : process.execPath;
    return { kind: 'source', command: node, args: [bin, 'mcp'], env: {}, note: existsSync(bin) ? null : `${bin} does not exist here; run mcp-config from the checkout` };
  }
  if (runningPackaged()) {
    const path = here();
    const resources = path.slice(0, path.indexOf(`${sep}app.asar${sep}`));
    return { kind: 'packaged', command: process.execPath, args: [join(resources, ...PACKAGED_CLI), 'mcp'], env: { ELECTRON_RUN_AS_NODE: '1' }, note: null };
  }
  const d = DEFAULT_INSTALLS[process.platform] ?? DEFAULT_INSTALLS.linux;
  return {
    kind: 'packaged',
    command: d.binary,
    args: [join(d.resources, ...PACKAGED_CLI), 'mcp'],
    env: { ELECTRON_RUN_AS_NODE: '1' },
    note: `assumes the app is installed at ${d.binary}; adjust both paths if it is elsewhere`,
  };
}
