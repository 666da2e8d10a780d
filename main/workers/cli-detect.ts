import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AppError } from '../core/errors.js';
import { findOnPath } from './which.js';

/**
 * Finding and probing the real agent CLIs without running a model: the binary (this checkout's
 * node_modules/.bin first, then PATH) and its `--version` under a throwaway home.
 */

/** node_modules/.bin/<name> of the nearest enclosing checkout of this module, else PATH. */
export function findCliBinary(name: string): string | null {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = findOnPath(join(dir, 'node_modules', '.bin', name));
    if (candidate) return candidate;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return findOnPath(name);
}

/** The binary and leading arguments a built-in CLI adapter runs. */
export interface CliCommand {
  bin: string;
  /** Arguments before the adapter's own (from a configured command). */
  prefix: string[];
}

/**
 * What a built-in adapter runs: the configured argv (`[workers.<worker>] command` in config.toml: its first
 * element a path or a name on PATH, the rest leading arguments) when given, else `binName` found as
 * {@link findCliBinary} does. Null when that binary is not there.
 */
export function resolveCliCommand(binName: string, configured?: readonly string[] | null): CliCommand | null {
  if (configured?.length) {
    const bin = findOnPath(configured[0]);
    return bin ? { bin, prefix: configured.slice(1) } : null;
  }
  const bin = findCliBinary(binName);
  return bin ? { bin, prefix: [] } : null;
}

/** Why a built-in CLI cannot run: the configured command is missing, or the binary is not installed. */
export function cliMissingReason(worker: string, binName: string, configured: readonly string[] | null | undefined, install: string): string {
  if (configured?.length) return `${configured[0]} not found or not executable (config.toml [workers.${worker}] command)`;
  return `${binName} not found (${install})`;
}

/** {@link resolveCliCommand} for a turn: a missing binary is a `worker_missing` error saying which. */
export function requireCliCommand(worker: string, binName: string, configured: readonly string[] | null | undefined): CliCommand {
  const cli = resolveCliCommand(binName, configured);
  if (!cli) throw new AppError('worker_missing', `worker ${worker}: ${cliMissingReason(worker, binName, configured, 'node_modules/.bin or PATH')}`);
  return cli;
}

/**
 * `<bin> --version` with HOME, XDG_* and the CLI's own config variables pointed at a temp folder
 * (removed afterwards), so probing never writes into the user's config. First line of stdout, or null.
 */
export function probeVersion(bin: string, timeoutMs = 8000, prefix: string[] = []): Promise<string | null> {
  const home = mkdtempSync(join(tmpdir(), 'lw-probe-'));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    CODEX_HOME: home,
    CLAUDE_CONFIG_DIR: join(home, '.claude'),
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_MODELS_FETCH: '1',
  };
  return new Promise((resolve) => {
    execFile(bin, [...prefix, '--version'], { env, timeout: timeoutMs, encoding: 'utf8', killSignal: 'SIGKILL' }, (err, stdout) => {
      rmSync(home, { recursive: true, force: true });
      const line = (stdout ?? '').trim().split('\n')[0]?.trim();
      resolve(err || !line ? null : line);
    });
  });
}

/** The version number in a `--version` line ("codex-cli 0.169.0" → "0.169.0"). */
export function versionNumber(line: string | null): string | null {
  if (!line) return null;
  return /\d+\.\d+\.\d+[\w.-]*/.exec(line)?.[0] ?? line;
}
