import { spawnSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { relative, resolve, sep } from 'node:path';
import type { Config } from '../core/config.js';
import { AppError } from '../core/errors.js';
import { scanFolder } from '../isolation/copy.js';

/** The workspace a `submit` sends, what the person is told about it, and the allowed paths it implies. */
export interface SubmitWorkspace {
  workspace: string;
  /** One line for stderr: which folder the task works in, and how (the repository root, a copy). */
  note: string | null;
  /** With --subfolder: the task's changes kept to the folder the person stood in. */
  allowedPaths?: string[];
}

function gitTopLevel(dir: string): string | null {
  const r = spawnSync('git', ['rev-parse', '--show-toplevel'], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return r.status === 0 ? r.stdout.trim() : null;
}

function sizeText(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : `${Math.max(1, Math.round(bytes / 1024))} KiB`;
}

/**
 * A task always works on a whole repository (its worktree or snapshot is of the repository), so a submit
 * from a subfolder uses the repository root and says so; `--subfolder` keeps the change inside the folder
 * the person stood in (as the task's allowed paths). A folder that is not a repository is worked on as a
 * private copy: the note says so and how big that copy is, and an over-budget folder is refused before
 * anything is queued.
 */
export function resolveSubmitWorkspace(dir: string, opts: { subfolder: boolean; allowedPaths?: string[] }, config: Config): SubmitWorkspace {
  let real: string;
  try {
    real = realpathSync(resolve(dir));
  } catch {
    return { workspace: resolve(dir), note: null }; // the engine names what is wrong with it
  }
  const top = gitTopLevel(real);
  if (top) {
    const root = realpathSync(top);
    const sub = relative(root, real).split(sep).join('/');
    if (!sub) return { workspace: root, note: null };
    if (!opts.subfolder) {
      return { workspace: root, note: `workspace: the repository root ${root} (you are in ${sub}/; --subfolder keeps the change inside it)` };
    }
    if (opts.allowedPaths?.length) {
      throw new AppError('invalid_input', '--subfolder: give it or --allowed-path, not both (--subfolder means --allowed-path ' + `'${sub}/**')`, { field: 'subfolder' });
    }
    return { workspace: root, note: `workspace: the repository root ${root}; changes kept to ${sub}/ (allowed path ${sub}/**)`, allowedPaths: [`${sub}/**`] };
  }
  if (opts.subfolder) throw new AppError('invalid_input', `--subfolder: ${real} is not inside a git repository`, { field: 'subfolder' });
  const entries = scanFolder(real, config.isolation.copy);
  const bytes = entries.reduce((n, e) => n + e.size, 0);
  return {
    workspace: real,
    note: `workspace: ${real} is not a git repository: the task works on a private copy (${entries.length} file${entries.length === 1 ? '' : 's'}, ${sizeText(bytes)}; ignored: ${config.isolation.copy.ignore.join(', ')}), and accept copies its change back`,
  };
}
