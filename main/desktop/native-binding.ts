import { existsSync } from 'node:fs';
import { join } from 'node:path';

/**
 * better-sqlite3 is a native addon built for one ABI. Plain Node (CLI, MCP, tests) uses node_modules as
 * installed. Inside Electron:
 * - the packaged app needs nothing here: electron-builder rebuilds the addon for Electron at packaging
 *   time (`npmRebuild: true` in electron-builder.yml) and unpacks it from the asar (`asarUnpack`);
 * - a source checkout run with `npm start` uses an Electron build of the addon when one is present:
 *   LIGHTWORKER_SQLITE_BINDING, or `.lightworker-dev/electron/better_sqlite3.node` (make it with
 *   `npx electron-rebuild -f -w better-sqlite3 -o .lightworker-dev/electron`, then copy
 *   `build/Release/better_sqlite3.node` there) — never replacing the Node build the tests rely on.
 */
export function electronSqliteBinding(appRoot: string, packaged: boolean, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.LIGHTWORKER_SQLITE_BINDING) return env.LIGHTWORKER_SQLITE_BINDING;
  if (packaged) return undefined;
  const dev = join(appRoot, '.lightworker-dev', 'electron', 'better_sqlite3.node');
  return existsSync(dev) ? dev : undefined;
}
