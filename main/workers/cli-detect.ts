import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
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

/**
 * `<bin> --version` with HOME, XDG_* and the CLI's own config variables pointed at a temp folder
 * (removed afterwards), so probing never writes into the user's config. First line of stdout, or null.
 */
export function probeVersion(bin: string, timeoutMs = 8000): Promise<string | null> {
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
    execFile(bin, ['--version'], { env, timeout: timeoutMs, encoding: 'utf8', killSignal: 'SIGKILL' }, (err, stdout) => {
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
