import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import type { HomePaths } from '../core/home.js';
import { withoutTreeMarker } from '../platform/proc/marker.js';
import { STARTED_BY_ENV } from '../workers/credentials.js';

/**
 * V8 flags of a leader LightWorker starts itself: young-generation semi-spaces capped at 2 MiB (V8 lets
 * them grow to 16 MiB under a drain's allocation rate): peak RSS 80 MiB instead of 89–93; one V8 worker
 * thread instead of four (each thread's malloc arena stays resident): −5 MiB; no optimizing compiler (its code
 * in the node binary and its compile zones): −7 MiB, the same CPU — a leader's hot paths are SQLite, JSON, regular
 * expressions and system calls; `gc()` for runner/heap-trim.ts (old-generation garbage collected at a task's end
 * once it reaches 2 MiB): −2 to −3 MiB (measured in a 200-task drain, npm run bench). V8 reads them only at process start.
 */
export const LEADER_V8_FLAGS: readonly string[] = ['--max-semi-space-size=2', '--v8-pool-size=1', '--no-opt', '--expose-gc'];

/** `process.execArgv` plus the leader flags it does not set itself (plain Node only: Electron gets none). */
export function leaderExecArgv(execArgv: readonly string[] = process.execArgv): string[] {
  if (process.versions.electron) return [...execArgv];
  const set = new Set(execArgv.map((a) => a.split('=')[0]));
  return [...execArgv, ...LEADER_V8_FLAGS.filter((f) => !set.has(f.split('=')[0]))];
}

/**
 * The environment of a leader LightWorker starts itself: the parent's, without a task's tree marker, and
 * without NODE_EXTRA_CA_CERTS unless the leader may open TLS connections (a PostgreSQL store): Node 20 parses
 * that file, with every bundled root certificate, at startup whether or not anything uses TLS (50 ms of each
 * start on the test machine, measured in a 200-task drain, npm run bench), and a leader on SQLite talks to no server. Workers never see it either
 * way (they get a minimal environment).
 */
export function leaderEnv(env: NodeJS.ProcessEnv, opts: { tls: boolean }): NodeJS.ProcessEnv {
  const out = withoutTreeMarker(env);
  if (!opts.tls) delete out.NODE_EXTRA_CA_CERTS;
  return out;
}

/**
 * Start a detached `lightworker run --until-idle` for this home, with output appended to
 * `<home>/logs/runner.log`. Used by short-lived faces (an MCP session inside `claude -p` or `codex
 * exec`) so that the work they queue outlives them. Re-runs the CLI entry this process was started
 * with (source checkout, packaged bundle, or ELECTRON_RUN_AS_NODE alike). Returns the child's pid.
 */
export function spawnBackgroundRunner(home: HomePaths, entry: string = process.argv[1], opts: { tls: boolean } = { tls: true }): number | null {
  const log = openSync(join(home.logs, 'runner.log'), 'a', 0o600);
  try {
    const child = spawn(process.execPath, [...leaderExecArgv(), entry, '--home', home.root, 'run', '--until-idle'], {
      detached: true,
      stdio: ['ignore', log, log],
      cwd: home.root,
      // Not part of the task whose agent may have started this MCP session: no tree marker. Marked as
      // started by an MCP server, whose host may have passed it only a whitelist of variables.
      env: { ...leaderEnv(process.env, opts), [STARTED_BY_ENV]: 'mcp' },
      windowsHide: true,
    });
    child.on('error', () => undefined);
    child.unref();
    return child.pid ?? null;
  } finally {
    closeSync(log);
  }
}
