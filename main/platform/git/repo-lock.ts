import { closeSync, fstatSync, linkSync, lstatSync, openSync, readdirSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { AppError } from '../../core/errors.js';
import { newToken } from '../../core/ids.js';
import { isSameProcess, processStartTime, sleep } from '../proc/process.js';
import { commonGitDir } from './git-exec.js';

/**
 * Cross-process, per-repository lock around every git mutation LightWorker makes.
 *
 * Choice: a lock file `lightworker.lock` in the repository's common git dir, created with O_EXCL and
 * holding `{pid, start, host, token}`. It lives with the repository (not the home), so two homes — or a
 * CLI and the desktop app — working on one repository exclude each other too.
 *
 * Taking it creates no file: each process keeps one owner file per lock beside it
 * (`lightworker.lock.<pid>-<start>`, the holder's JSON rewritten per take) and hard-links it as the lock, which
 * fails when the lock exists just as O_EXCL does; giving it back unlinks the link if it is still ours (same
 * inode). A new file per take was the costliest system call of a leader's drain on a file system that scans
 * recently freed inodes (measured in a 200-task drain, npm run bench). The owner files go when their process exits, or with a stale lock, or by
 * the next process's first take when their process is gone. A file system without hard links gets the
 * O_EXCL file.
 *
 * Stale detection: a lock whose holder is on this host and is no longer the same process (PID gone, or
 * PID recycled: start time differs) is stale. Breaking it happens under a second, tiny O_EXCL file
 * (`lightworker.lock.break`) held only for the read-check-unlink, so two processes can never both
 * judge the same lock stale and one of them delete the other's fresh lock. A `.break` file older than
 * 30 s can only be left by a crash inside that microsecond window and is removed by age.
 *
 * Re-entrant by proof, not by context: `fn` gets a {@link HeldLock}, and work nested inside it passes that
 * as `within` to run under the same lock instead of waiting for itself. (It was AsyncLocalStorage, whose
 * promise hooks, once entered, slowed every promise of a leader for the rest of its life: 0.5 ms of CPU per
 * task in a 200-task drain, npm run bench.) Other async work in the same process still waits its turn.
 */

interface LockOwner {
  pid: number;
  start: string | null;
  host: string;
  token: string;
  at: number;
  what: string;
}

/** The caller holds the lock on `path` (given to the function a lock runs); valid until that function ends. */
export interface HeldLock {
  readonly path: string;
}

const live = new WeakSet<HeldLock>();
const lockPathCache = new Map<string, string>();

export interface RepoLockOptions {
  /** Give up after this long, in ms (default 120 s). */
  timeoutMs?: number;
  /** Nested work: the lock the caller already holds (its function's argument); the same lock runs `fn` at once. */
  within?: HeldLock | null;
}

/** Path of the lock file for the repository containing `repo`. */
export async function repoLockPath(repo: string): Promise<string> {
  const cached = lockPathCache.get(repo);
  if (cached) return cached;
  const path = join(await commonGitDir(repo), 'lightworker.lock');
  lockPathCache.set(repo, path);
  return path;
}

/**
 * Waiters of this process per lock path, in order: they take turns here and only the head competes for
 * the file, so an in-process waiter starts the moment the previous holder releases instead of polling
 * the lock file with back-off sleeps (which cost a dispatch burst tens of ms per task, measured in a 200-task drain, npm run bench).
 */
const localTail = new Map<string, Promise<void>>();

async function inLocalTurn<T>(path: string, timeoutMs: number, fn: (leftMs: number) => Promise<T>): Promise<T> {
  const previous = localTail.get(path) ?? Promise.resolve();
  let done!: () => void;
  const mine = new Promise<void>((r) => (done = r));
  const tail = previous.then(() => mine);
  localTail.set(path, tail);
  const t0 = Date.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    // Bounded like the file lock: the deadline counts from the call, whichever wait it is spent in.
    const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), timeoutMs)));
    if ((await Promise.race([previous, late])) === 'late') {
      throw new AppError(
        'conflict',
        `repository lock ${path} is held by another operation of this process; gave up after ${Math.round(timeoutMs / 1000)} s (work nested in a held lock passes it as \`within\`)`,
      );
    }
    clearTimeout(timer);
    return await fn(Math.max(0, timeoutMs - (Date.now() - t0)));
  } finally {
    clearTimeout(timer);
    done();
    if (localTail.get(path) === tail) localTail.delete(path);
  }
}

/** Run `fn` holding the repository's lock; `what` names the operation for anyone waiting. */
export async function withRepoLock<T>(repo: string, what: string, fn: (held: HeldLock) => Promise<T>, opts: RepoLockOptions = {}): Promise<T> {
  return withLockFile(await repoLockPath(repo), what, fn, opts);
}

/**
 * The same lock on any file path (copy isolation locks a plain folder by a file in the home: it has no
 * git dir). Re-entrant for work that passes the held lock as `within`.
 */
export async function withLockFile<T>(path: string, what: string, fn: (held: HeldLock) => Promise<T>, opts: RepoLockOptions = {}): Promise<T> {
  const within = opts.within;
  if (within && within.path === path && live.has(within)) return fn(within);
  return inLocalTurn(path, opts.timeoutMs ?? 120_000, async (leftMs) => {
    const take = await acquire(path, what, leftMs);
    const held: HeldLock = { path };
    live.add(held);
    try {
      return await fn(held);
    } finally {
      live.delete(held);
      release(path, take);
    }
  });
}

/** This process's start time: the same for its whole life, so read once (it was a /proc read per lock). */
let ownStart: string | null | undefined;

/** A take of the lock: the owner token, and the inode of the owner file linked as the lock (null: an O_EXCL file). */
interface Take {
  token: string;
  ino: number | null;
}

/** This process's owner file per lock path (written and linked per take), or false where hard links fail. */
const ownerFiles = new Map<string, string | false>();
let ownerCleanup = false;

const OWNER_FILE = /^(.*)\.(\d+)-(\d+|x)$/;

function ownerFileOf(path: string): string | false {
  let file = ownerFiles.get(path);
  if (file !== undefined) return file;
  file = `${path}.${process.pid}-${ownStart ?? 'x'}`;
  ownerFiles.set(path, file);
  sweepOwnerFiles(path);
  if (!ownerCleanup) {
    ownerCleanup = true;
    process.on('exit', () => {
      for (const f of ownerFiles.values()) if (f) unlinkQuietly(f);
    });
  }
  return file;
}

/** Owner files beside `path` whose process (on this host) is gone: left by a process that was killed. */
function sweepOwnerFiles(path: string): void {
  let names: string[];
  try {
    names = readdirSync(dirname(path));
  } catch {
    return;
  }
  const base = basename(path);
  for (const name of names) {
    const m = OWNER_FILE.exec(name);
    if (!m || m[1] !== base || Number(m[2]) === process.pid) continue;
    const file = join(dirname(path), name);
    const o = readOwner(file);
    if (o && o.host === hostname() && !isSameProcess(o.pid, o.start)) unlinkQuietly(file);
  }
}

/** Who this process is, as lock owners and other records of a process at work name it. */
export function processIdentity(): { pid: number; start: string | null; host: string } {
  if (ownStart === undefined) ownStart = processStartTime(process.pid);
  return { pid: process.pid, start: ownStart, host: hostname() };
}

/** The process a record names has ended (on this host; another machine's is never judged gone). */
export function isProcessGone(o: { pid: number; start: string | null; host: string }): boolean {
  return o.host === hostname() && !isSameProcess(o.pid, o.start);
}

function sameInode(a: string, b: string): boolean {
  try {
    return lstatSync(a).ino === lstatSync(b).ino;
  } catch {
    return false;
  }
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}

/** Take the lock once: link this process's owner file as the lock (or O_EXCL-create it); false when it is held. */
function tryTake(path: string, owner: LockOwner, again = true): Take | null {
  const body = JSON.stringify(owner);
  const file = ownerFileOf(path);
  if (file) {
    try {
      writeOwnerFile(file, body);
      linkSync(file, path);
      return { token: owner.token, ino: lstatSync(file).ino };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') {
        // Held through this process's own owner file, though no one here holds it (takes of a path are one at
        // a time in a process): a give-back that failed. Not a lock anyone holds: take it again.
        if (again && sameInode(path, file)) {
          unlinkQuietly(path);
          return tryTake(path, owner, false);
        }
        return null;
      }
      if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EXDEV', 'ENOSYS', 'EMLINK'].includes(code ?? '')) {
        throw new AppError('git_failed', `cannot create repository lock ${path}: ${(err as Error).message}`);
      }
      // No hard links here: the O_EXCL file from now on.
      unlinkQuietly(file);
      ownerFiles.set(path, false);
    }
  }
  return tryCreate(path, body) ? { token: owner.token, ino: null } : null;
}

/** Longest body written to each owner file so far: shorter ones are padded to it. */
const ownerFileSize = new Map<string, number>();

/**
 * Rewrite the owner file in place, never truncating it: a truncate-to-zero of a file just written makes
 * ext4 (auto_da_alloc) flush it, and that was 2–3 ms of the leader's main thread per take, 16 % of a
 * drain's CPU. The body is padded with spaces (JSON allows them) to the longest one written before.
 */
function writeOwnerFile(file: string, body: string): void {
  let fd: number;
  try {
    fd = openSync(file, 'r+');
  } catch {
    fd = openSync(file, 'w', 0o600);
  }
  try {
    const bytes = Buffer.byteLength(body);
    const size = Math.max(bytes, ownerFileSize.get(file) ?? fstatSync(fd).size);
    writeSync(fd, body.padEnd(body.length + size - bytes, ' '), 0);
    ownerFileSize.set(file, size);
  } finally {
    closeSync(fd);
  }
}

async function acquire(path: string, what: string, timeoutMs: number): Promise<Take> {
  if (ownStart === undefined) ownStart = processStartTime(process.pid);
  const owner: LockOwner = {
    pid: process.pid,
    start: ownStart,
    host: hostname(),
    token: newToken(12),
    at: Date.now(),
    what,
  };
  const deadline = Date.now() + timeoutMs;
  let delay = 5;
  for (;;) {
    const take = tryTake(path, owner);
    if (take) return take;
    breakIfStale(path);
    if (Date.now() > deadline) {
      const holder = readOwner(path);
      throw new AppError(
        'conflict',
        `repository lock ${path} is held${holder ? ` by pid ${holder.pid} on ${holder.host} (${holder.what})` : ''}; gave up after ${Math.round(timeoutMs / 1000)} s`,
      );
    }
    await sleep(delay);
    delay = Math.min(delay * 2, 100);
  }
}

function tryCreate(path: string, body: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw new AppError('git_failed', `cannot create repository lock ${path}: ${(err as Error).message}`);
  }
  try {
    writeSync(fd, body);
  } finally {
    closeSync(fd);
  }
  return true;
}

function readOwner(path: string): LockOwner | null {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as LockOwner;
  } catch {
    return null;
  }
}

function isStale(o: LockOwner | null, path: string): boolean {
  if (!o) {
    // Unreadable or half-written: stale only once it is clearly not being written right now.
    try {
      return Date.now() - statSync(path).mtimeMs > 5_000;
    } catch {
      return false;
    }
  }
  if (o.host !== hostname()) return false; // another machine's process: never guess
  return !isSameProcess(o.pid, o.start);
}

function breakIfStale(path: string): void {
  const breaker = `${path}.break`;
  try {
    if (Date.now() - statSync(breaker).mtimeMs > 30_000) unlinkSync(breaker);
  } catch {
    // no breaker, or someone else removed it
  }
  if (!tryCreate(breaker, String(process.pid))) return;
  try {
    const o = readOwner(path);
    if (isStale(o, path)) {
      unlinkSync(path);
      // Its holder's owner file (a linked lock) goes with it.
      if (o) unlinkQuietly(`${path}.${o.pid}-${o.start ?? 'x'}`);
    }
  } catch {
    // the lock vanished meanwhile: the next create attempt decides
  } finally {
    try {
      unlinkSync(breaker);
    } catch {
      // already gone
    }
  }
}

function release(path: string, take: Take): void {
  if (take.ino !== null) {
    // Still the link to our owner file? Else someone judged us stale and took over: not ours to delete.
    let ino: number;
    try {
      ino = lstatSync(path).ino;
    } catch {
      return;
    }
    if (ino === take.ino) unlinkQuietly(path);
    return;
  }
  const o = readOwner(path);
  if (o?.token !== take.token) return; // someone judged us stale and took over; not ours to delete
  unlinkQuietly(path);
}
