import { closeSync, fstatSync, ftruncateSync, futimesSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { newToken } from '../core/ids.js';
import { pidExists } from '../platform/proc/process.js';

/**
 * Scratch index files (GIT_INDEX_FILE) of a snapshot store, reused by this process: computing a source's
 * state copies the user's index over one and lets git rewrite it, twice per in-place read-only task. A
 * new file per call and its removal after were the costliest file-system calls of a leader's drain; a
 * reused one is only overwritten. Each is named `index-<pid>-<token>-<n>`, so no other process ever takes
 * it (and it is overwritten in place: fillScratchIndex); the free ones are removed when this process exits, and those of a process that died without that
 * (killed) by the next process that makes one in the store.
 */
const PREFIX = 'index-';
const TOKEN = newToken(6);
const free = new Map<string, string[]>();
let made = 0;
let removesAtExit = false;

/** A scratch index path in `store` that nobody else uses until it is given back (it may exist, with any content). */
export function takeScratchIndex(store: string): string {
  if (!removesAtExit) {
    removesAtExit = true;
    process.once('exit', removeFree);
  }
  const reused = free.get(store)?.pop();
  if (reused) return reused;
  // A new one is made at most once per concurrent call: then is when leftovers are looked for.
  sweepDeadOwners(store);
  return join(store, `${PREFIX}${process.pid}-${TOKEN}-${++made}`);
}

/** Give a scratch index back for the next call (kept as it is: the next user overwrites or removes it). */
export function releaseScratchIndex(store: string, index: string): void {
  const list = free.get(store) ?? [];
  list.push(index);
  free.set(store, list);
}

/** Remove a scratch index that is not to be reused, with the lock file a git killed while writing it left. */
export function discardScratchIndex(index: string): void {
  rmSync(index, { force: true });
  rmSync(`${index}.lock`, { force: true });
}

/**
 * Make `index` a copy of `source` with its times (git hashes an entry again only when its file is not
 * older than the index: the copy must look as old as the original). Written over the old bytes and cut to
 * length, never truncated to zero first: a truncate-to-zero of a written file makes ext4 (auto_da_alloc)
 * flush it on close, 1–2 ms of the main thread, more than creating a new file did.
 */
export function fillScratchIndex(index: string, source: string): void {
  const src = openSync(source, 'r');
  let bytes: Buffer;
  let times: { atime: Date; mtime: Date };
  try {
    times = fstatSync(src);
    bytes = readFileSync(src);
  } finally {
    closeSync(src);
  }
  let fd: number;
  try {
    fd = openSync(index, 'r+');
  } catch {
    fd = openSync(index, 'w', 0o600);
  }
  try {
    writeSync(fd, bytes, 0, bytes.length, 0);
    if (fstatSync(fd).size > bytes.length) ftruncateSync(fd, bytes.length);
    futimesSync(fd, times.atime, times.mtime);
  } finally {
    closeSync(fd);
  }
}

function removeFree(): void {
  for (const list of free.values()) for (const index of list) rmSync(index, { force: true });
  free.clear();
}

/** Remove scratch indexes (and git's lock files beside them) left by processes that no longer exist. */
function sweepDeadOwners(store: string): void {
  let names: string[];
  try {
    names = readdirSync(store);
  } catch {
    return;
  }
  for (const name of names) {
    const m = /^index-(\d+)-/.exec(name);
    if (m && Number(m[1]) !== process.pid && !pidExists(Number(m[1]))) rmSync(join(store, name), { force: true });
  }
}
