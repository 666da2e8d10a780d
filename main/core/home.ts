import { accessSync, constants, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { AppError } from './errors.js';
import { makeHomePrivate, mkdirPrivate } from './private-home.js';

/** Every path LightWorker owns inside one home. */
export interface HomePaths {
  root: string;
  db: string;
  config: string;
  worktrees: string;
  artifacts: string;
  logs: string;
  /** The store's identity, kept outside the database: a home that had a store never silently gets a new one. */
  storeId: string;
}

/**
 * Resolve the home directory: an explicit `--home` wins, then LIGHTWORKER_HOME, then the platform
 * default (Windows %LOCALAPPDATA%\LightWorker, elsewhere $XDG_STATE_HOME/lightworker or
 * ~/.local/state/lightworker).
 */
export function resolveHome(explicit?: string, env: NodeJS.ProcessEnv = process.env): HomePaths {
  let root: string;
  if (explicit) root = resolve(explicit);
  else if (env.LIGHTWORKER_HOME) root = resolve(env.LIGHTWORKER_HOME);
  else if (process.platform === 'win32' && env.LOCALAPPDATA) root = join(env.LOCALAPPDATA, 'LightWorker');
  else {
    const state = env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : join(homedir(), '.local', 'state');
    root = join(state, 'lightworker');
  }
  return homePaths(root);
}

export function homePaths(root: string): HomePaths {
  return {
    root,
    db: join(root, 'lightworker.db'),
    config: join(root, 'config.toml'),
    worktrees: join(root, 'worktrees'),
    artifacts: join(root, 'artifacts'),
    logs: join(root, 'logs'),
    storeId: join(root, 'store-id'),
  };
}

/**
 * Create the home's folders (idempotent), private to this user (core/private-home.ts). In a home this user
 * may not write, a missing folder is left missing: reads still work, and a write names what it could not write.
 */
export function ensureHomeDirs(home: HomePaths): void {
  for (const dir of [home.root, home.worktrees, home.artifacts, home.logs]) {
    try {
      mkdirPrivate(dir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EACCES' && code !== 'EPERM' && code !== 'EROFS') throw err;
    }
  }
}

export function isWritable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Open a home for use: its folders made (ensureHomeDirs) and the whole of it private to this user
 * (makeHomePrivate). An existing home found readable by others is narrowed, and said once on stderr (the
 * next open finds it private and says nothing).
 */
export function openHomePrivately(home: HomePaths): void {
  refuseForeignFolder(home.root);
  ensureHomeDirs(home);
  const narrowed = makeHomePrivate(home.root, home.db);
  if (narrowed) process.stderr.write(`lightworker: ${home.root} was readable by other local users; made it private (folders 0700, files 0600: ${narrowed} entries)\n`);
}

/** Entries a folder LightWorker has opened as a home always holds (the first three are made before anything else). */
const HOME_MARKERS = new Set(['worktrees', 'artifacts', 'logs', 'lightworker.db', 'config.toml', 'store-id']);

/**
 * A home is a folder of its own: opening one makes all of it private, which would take the group and other
 * bits off every file of a folder named by mistake (`--home ~/project`, `--home /home`). A folder that exists,
 * holds files, and has none of a home's entries is refused before anything in it changes. Dot files alone
 * (a `.gitkeep`, a `.DS_Store`) do not make a folder someone else's.
 */
export function refuseForeignFolder(root: string): void {
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return; // missing (it is made) or unreadable (whoever writes reports that)
  }
  if (names.some((n) => HOME_MARKERS.has(n))) return;
  const foreign = names.filter((n) => !n.startsWith('.'));
  if (foreign.length === 0) return;
  const shown = foreign.slice(0, 3).join(', ') + (foreign.length > 3 ? `, … (${foreign.length} entries)` : '');
  throw new AppError('invalid_input', `home ${root} is not a LightWorker home: it already holds ${shown}. A home must be a folder of its own (new or empty), because LightWorker makes all of it private to you; choose another with --home or LIGHTWORKER_HOME. Nothing was changed.`);
}
