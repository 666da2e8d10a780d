import { copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { z } from 'zod';
import { AppError } from '../core/errors.js';
import { redactText } from '../core/redact.js';
import { setupSchema } from '../core/config.js';
import type { EngineContext } from '../tasks/engine-context.js';
import { commandEnv, runBounded } from '../platform/proc/bounded-run.js';
import { git, splitZ } from '../platform/git/git-exec.js';
import { matchGlob, mayContainMatch } from '../platform/git/globs.js';
import { mkdirPrivate, PRIVATE_FILE } from '../core/private-home.js';

/**
 * Per-repository setup (`.lightworker/setup.toml` in the source checkout, or `[setup."<repo path>"]` in
 * config.toml, which wins):
 *
 * ```toml
 * copy = [".env.local", "config/*.local.json"]   # untracked/ignored files to copy in; nothing by default
 * setup = "npm ci"                               # or ["npm", "ci"]; runs in the worktree
 * setup_timeout_s = 600
 * ```
 * Globs are anchored at the repository root (`**` for any depth). A file named `.env*` is copied only
 * when the matching pattern itself mentions `.env` — `copy = ["*"]` never carries secrets along.
 */
export { setupSchema };
export type SetupConfig = z.output<typeof setupSchema>;

export const SETUP_FILE = '.lightworker/setup.toml';

/**
 * The repository's setup: the config's `setup."<repo path>"` table when present (settings win), else
 * `.lightworker/setup.toml` in the source checkout, else nothing (copy nothing, run nothing).
 */
export function readSetup(engine: EngineContext, repo: string): SetupConfig {
  // `setup` is a map in config.toml keyed by repository path.
  const overrides: Record<string, unknown> = engine.config.setup;
  let raw: unknown = {};
  let source = `config setup."${repo}"`;
  if (overrides && overrides[repo] !== undefined) raw = overrides[repo];
  else {
    source = join(repo, SETUP_FILE);
    if (!existsSync(source)) return setupSchema.parse({});
    try {
      raw = parseToml(readFileSync(source, 'utf8'));
    } catch (e) {
      throw new AppError('invalid_input', `${source}: not valid TOML: ${(e as Error).message}`);
    }
  }
  const parsed = setupSchema.safeParse(raw);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new AppError(
      'invalid_input',
      `${source}: ${i.path.join('.') || (i.code === 'unrecognized_keys' ? i.keys.join(', ') : 'setup')}: ${i.message}`,
    );
  }
  return parsed.data;
}

function isEnvFile(path: string): boolean {
  return /(^|\/)\.env[^/]*$/.test(path);
}

/** Untracked and ignored files of `repo` that the copy globs select (`.env*` only when a pattern names it). */
export async function selectCopies(repo: string, globs: readonly string[]): Promise<string[]> {
  if (!globs.length) return [];
  const tracked = new Set(splitZ(await git(repo, ['ls-files', '-z'], { raw: true })));
  const picked: string[] = [];
  const walk = (rel: string) => {
    let names: string[];
    try {
      names = readdirSync(join(repo, rel));
    } catch {
      return;
    }
    for (const name of names) {
      const p = rel ? `${rel}/${name}` : name;
      if (name === '.git' && !rel) continue;
      const st = lstatSync(join(repo, p));
      if (st.isDirectory()) {
        if (globs.some((g) => mayContainMatch(p, g))) walk(p);
      } else if (st.isFile() && !tracked.has(p)) {
        const env = isEnvFile(p);
        if (globs.some((g) => (!env || g.includes('.env')) && matchGlob(p, g))) picked.push(p);
      }
    }
  };
  walk('');
  return picked.sort();
}

export interface SetupOutcome {
  copied: string[];
  command: SetupConfig['setup'] | null;
  exitCode: number | null;
  durationMs: number;
  log: string | null;
}

/**
 * Copy the selected files into the worktree, then run the setup command there (timeout, minimal env +
 * `env`). Output is kept (redacted) in `logPath`. A failing or timed-out setup throws.
 */
export async function runSetup(
  repo: string,
  worktree: string,
  cfg: SetupConfig,
  env: Record<string, string>,
  logPath: string,
  signal?: AbortSignal,
): Promise<SetupOutcome> {
  const copied = await selectCopies(repo, cfg.copy);
  for (const p of copied) {
    mkdirSync(dirname(join(worktree, p)), { recursive: true });
    copyFileSync(join(repo, p), join(worktree, p));
  }
  if (!cfg.setup) return { copied, command: null, exitCode: null, durationMs: 0, log: null };
  const r = await runBounded(cfg.setup, { cwd: worktree, env: commandEnv(env), timeoutMs: cfg.setup_timeout_s * 1000, signal });
  mkdirPrivate(dirname(logPath));
  writeFileSync(logPath, redactText(r.output), { mode: PRIVATE_FILE });
  const shown = Array.isArray(cfg.setup) ? cfg.setup.join(' ') : cfg.setup;
  if (r.spawnError) throw new AppError('invalid_input', `setup command "${shown}" could not start: ${r.spawnError}`);
  if (r.timedOut)
    throw new AppError('timed_out', `setup command "${shown}" timed out after ${cfg.setup_timeout_s} s; output in ${logPath}`);
  if (r.aborted) throw new AppError('cancelled', `setup command "${shown}" was cancelled`);
  if (r.exitCode !== 0)
    throw new AppError('worker_failed', `setup command "${shown}" failed with exit ${r.exitCode ?? r.signal}; output in ${logPath}`, {
      exitCode: r.exitCode,
    });
  return { copied, command: cfg.setup, exitCode: r.exitCode, durationMs: r.durationMs, log: logPath };
}
