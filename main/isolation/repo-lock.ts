import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { AppError } from '../core/errors.js';
import { newToken } from '../core/ids.js';
import { isSameProcess, processStartTime, sleep } from '../runner/process.js';
import { commonGitDir } from './git-exec.js';

/**
 * Cross-process, per-repository lock around every git mutation LightWorker makes.
 *
 * Choice: a lock file `lightworker.lock` in the repository's common git dir, created with O_EXCL and
 * holding `{pid, start, host, token}`. It lives with the repository (not the home), so two homes — or a
 * CLI and the desktop app — working on one repository exclude each other too.
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
 * task in a 200-task drain, issue 13.) Other async work in the same process still waits its turn.
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
 * the lock file with back-off sleeps (which cost a dispatch burst tens of ms per task, issue 13).
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
    const token = await acquire(path, what, leftMs);
    const held: HeldLock = { path };
    live.add(held);
    try {
      return await fn(held);
    } finally {
      live.delete(held);
      release(path, token);
    }
  });
}

/** This process's start time: the same for its whole life, so read once (it was a /proc read per lock). */
let ownStart: string | null | undefined;

async function acquire(path: string, what: string, timeoutMs: number): Promise<string> {
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
    if (tryCreate(path, JSON.stringify(owner))) return owner.token;
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
    fd = openSync(path, 'wx', 0o644);
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
    if (isStale(o, path)) unlinkSync(path);
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

function release(path: string, token: string): void {
  const o = readOwner(path);
  if (o?.token !== token) return; // someone judged us stale and took over; not ours to delete
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}
