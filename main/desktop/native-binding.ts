/**
 * better-sqlite3 is a native addon built for one ABI. Plain Node (CLI, MCP, tests) uses node_modules as
 * installed. Inside Electron:
 * - the packaged app needs nothing here: electron-builder rebuilds the addon for Electron at packaging
 *   time (`npmRebuild: true` in electron-builder.yml) and unpacks it from the asar (`asarUnpack`);
 * - a source checkout started with `npm start` gets the Electron build of the addon in
 *   LIGHTWORKER_SQLITE_BINDING: scripts/start.js finds it (`.lightworker-dev/electron/`, made by
 *   `npm run electron:sqlite`, never replacing the Node build the tests rely on) and checks that Electron
 *   can load it before launching the app; without one it starts the console instead and prints that command.
 */
export function electronSqliteBinding(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.LIGHTWORKER_SQLITE_BINDING || undefined;
}
