import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/lightworker.js', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run the real `lightworker` binary with a home; never throws on a non-zero exit. */
export function runCli(args: string[], opts: { home: string; cwd?: string; env?: Record<string, string>; timeoutMs?: number }): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: opts.cwd, env: { ...process.env, LIGHTWORKER_HOME: opts.home, ...opts.env }, timeout: opts.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Start a long-running `lightworker` process (run, serve, mcp). */
export function startCli(args: string[], opts: { home: string; env?: Record<string, string> }): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], { env: { ...process.env, LIGHTWORKER_HOME: opts.home, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
}
