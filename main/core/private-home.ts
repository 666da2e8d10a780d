import { chmodSync, closeSync, existsSync, lstatSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A home holds every task's objective, its worker's output, diffs, logs and the key that seals secrets:
 * nobody but its owner may read any of it. The home folder and every folder LightWorker makes in it are
 * 0700, every file it writes 0600 — set at creation (`mode`, which only narrows the umask) rather than
 * by a process-wide umask, which would also narrow the files a worker or `accept` writes in the user's
 * repository. Worker CLIs write their own files (transcripts, caches) with their own modes, inside these
 * 0700 folders. Windows has no such modes: there the home relies on the user profile's ACLs.
 */
export const PRIVATE_DIR = 0o700;
export const PRIVATE_FILE = 0o600;

/** mkdir -p whose created folders are 0700. */
export function mkdirPrivate(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR });
}

/** Create `path` empty with mode 0600 if it does not exist (before a library creates it with its own mode). */
export function touchPrivate(path: string): void {
  if (existsSync(path)) return;
  try {
    closeSync(openSync(path, 'a', PRIVATE_FILE));
  } catch {
    // a folder this user may not write: whoever opens it reports that
  }
}

/** Folders of working trees (the user's files, modes git cares about): only the folder itself is narrowed. */
const WORKING_TREES = new Set(['worktrees', 'snapshots']);

const uid = process.getuid?.() ?? -1;

/**
 * Take group and other bits off one entry; true when it had some. Entries this user cannot change are left
 * (and reported by whoever uses them), and so are entries another user owns, which root could change but
 * LightWorker never made.
 */
function narrow(path: string): boolean {
  try {
    const st = lstatSync(path);
    if (st.isSymbolicLink() || (st.mode & 0o077) === 0 || (uid >= 0 && st.uid !== uid)) return false;
    chmodSync(path, st.mode & 0o700);
    return true;
  } catch {
    return false;
  }
}

function narrowTree(dir: string): number {
  let n = narrow(dir) ? 1 : 0;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return n;
  }
  for (const name of names) {
    const path = join(dir, name);
    let isDir = false;
    try {
      const st = lstatSync(path);
      isDir = st.isDirectory();
    } catch {
      continue;
    }
    if (isDir) n += narrowTree(path);
    else if (narrow(path)) n += 1;
  }
  return n;
}

/**
 * Make an existing home private. Cheap when it already is (a few stats): the home folder, its store files
 * (`lightworker.db` and its -wal/-shm), config.toml and secret.key are checked on every open. A home
 * folder found readable by others (made by an earlier version, or by hand) is narrowed as a whole: every
 * file and folder in it loses its group and other bits, except the working trees in `worktrees/` and
 * `snapshots/`, which keep the modes git gave them — the closed folder above them keeps them private. Returns how many entries were narrowed (0: nothing to do).
 */
export function makeHomePrivate(root: string, dbPath: string): number {
  if (process.platform === 'win32') return 0;
  let open = false;
  try {
    open = (lstatSync(root).mode & 0o077) !== 0;
  } catch {
    return 0;
  }
  let n = 0;
  if (open) {
    n += narrow(root) ? 1 : 0;
    let names: string[] = [];
    try {
      names = readdirSync(root);
    } catch {
      // unreadable: nothing more this user can narrow
    }
    for (const name of names) {
      const path = join(root, name);
      n += WORKING_TREES.has(name) ? narrowShallow(path) : narrowTree(path);
    }
    return n;
  }
  for (const path of [dbPath, `${dbPath}-wal`, `${dbPath}-shm`, join(root, 'config.toml'), join(root, 'secret.key')]) if (narrow(path)) n += 1;
  return n;
}

/** A folder of working trees: the folder itself; the trees in it keep the modes git gave them. */
function narrowShallow(dir: string): number {
  return narrow(dir) ? 1 : 0;
}
