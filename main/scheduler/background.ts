import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import type { HomePaths } from '../core/home.js';
import { withoutTreeMarker } from '../runner/lifecycle.js';

/**
 * Start a detached `lightworker run --until-idle` for this home, with output appended to
 * `<home>/logs/runner.log`. Used by short-lived faces (an MCP session inside `claude -p` or `codex
 * exec`) so that the work they queue outlives them. Re-runs the CLI entry this process was started
 * with (source checkout, packaged bundle, or ELECTRON_RUN_AS_NODE alike). Returns the child's pid.
 */
export function spawnBackgroundRunner(home: HomePaths, entry: string = process.argv[1]): number | null {
  const log = openSync(join(home.logs, 'runner.log'), 'a', 0o600);
  try {
    const child = spawn(process.execPath, [...process.execArgv, entry, '--home', home.root, 'run', '--until-idle'], {
      detached: true,
      stdio: ['ignore', log, log],
      cwd: home.root,
      // Not part of the task whose agent may have started this MCP session: no tree marker.
      env: withoutTreeMarker(process.env),
      windowsHide: true,
    });
    child.on('error', () => undefined);
    child.unref();
    return child.pid ?? null;
  } finally {
    closeSync(log);
  }
}
