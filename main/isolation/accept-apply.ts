import { lstatSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { Db } from '../store/db.js';
import { appendEvent } from '../store/events.js';
import { getTask } from '../store/tasks.js';
import { transition } from '../tasks/state.js';
import type { Task } from '../tasks/types.js';
import type { AcceptJournal } from './accept-journal.js';
import { pauseForTest } from './accept-journal.js';
import { git, gitTry, splitZ } from '../platform/git/git-exec.js';

/**
 * The steps of an accept that change the user's repository, shared by the accept itself and by the
 * recovery of an interrupted one. Every git call here runs in its own process group: a Ctrl-C at the
 * terminal reaches LightWorker (which finishes the step) but not the git process in the middle of it.
 */

const OWN_GROUP = { detached: true } as const;
const ZERO = '0'.repeat(40);

/** The branch checked out in the source checkout, or null when HEAD is detached. */
export async function currentBranch(repo: string): Promise<string | null> {
  const r = await gitTry(repo, ['symbolic-ref', '--quiet', '--short', 'HEAD']);
  return r.exitCode === 0 ? r.stdout.trim() : null;
}

/** Move the branch from `from` to `to` (null: absent) only if it is still at `from`; false when it is not. */
export async function moveRef(repo: string, branch: string, from: string | null, to: string | null, why: string): Promise<boolean> {
  const ref = `refs/heads/${branch}`;
  const zero = (from ?? to ?? ZERO).length === 64 ? '0'.repeat(64) : ZERO;
  const args = to ? ['update-ref', '-m', why, ref, to, from ?? zero] : ['update-ref', '-m', why, '-d', ref, from ?? zero];
  return (await gitTry(repo, args, OWN_GROUP)).exitCode === 0;
}

/**
 * Bring the given paths of the checkout and its index to `commit`: written from it where it has them,
 * removed where it does not.
 */
export async function syncCheckout(repo: string, commit: string, files: string[]): Promise<void> {
  if (!files.length) return;
  const tree = new Set(splitZ(await git(repo, ['ls-tree', '-r', '--name-only', '-z', commit], { raw: true })));
  const present = files.filter((f) => tree.has(f));
  const gone = files.filter((f) => !tree.has(f));
  if (present.length)
    await git(repo, ['checkout', '--pathspec-from-file=-', '--pathspec-file-nul', commit], { input: present.join('\0'), ...OWN_GROUP });
  await pauseForTest('mid-checkout');
  if (gone.length)
    await git(repo, ['rm', '-q', '-f', '--ignore-unmatch', '--pathspec-from-file=-', '--pathspec-file-nul'], { input: gone.join('\0'), ...OWN_GROUP });
}

/** Blob of each of `files` in `commit` (absent paths missing from the map). */
async function blobsIn(repo: string, commit: string, files: Set<string>): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const row of splitZ(await git(repo, ['ls-tree', '-r', '--full-tree', '-z', commit], { raw: true }))) {
    const tab = row.indexOf('\t');
    const path = row.slice(tab + 1);
    if (files.has(path)) out.set(path, row.slice(0, tab).split(' ')[2]);
  }
  return out;
}

export interface TouchedSplit {
  /** Index entry and file both at the content before or after the accept: safe to write. */
  ours: string[];
  /** The index entry is, the file is not (the user edited it since): only the index entry is ours. */
  indexOnly: string[];
  /** The index entry changed too (the user staged something): left entirely alone. */
  changed: string[];
}

/**
 * Which touched paths are still as an interrupted accept left them — index entry and file each at the
 * content before or after it — and which someone changed since (a user's edit is never overwritten).
 */
export async function splitTouched(repo: string, before: string, after: string, files: string[]): Promise<TouchedSplit> {
  const set = new Set(files);
  const [old, neu] = await Promise.all([blobsIn(repo, before, set), blobsIn(repo, after, set)]);
  const index = new Map<string, string>();
  for (const row of splitZ(await git(repo, ['ls-files', '-s', '-z', '--full-name'], { raw: true }))) {
    const tab = row.indexOf('\t');
    const path = row.slice(tab + 1);
    if (!set.has(path)) continue;
    const [, blob, stage] = row.slice(0, tab).split(' ');
    index.set(path, stage === '0' ? blob : 'conflicted');
  }
  const disk = await hashOnDisk(repo, files);
  const split: TouchedSplit = { ours: [], indexOnly: [], changed: [] };
  for (const f of files) {
    const allowed = new Set([old.get(f) ?? null, neu.get(f) ?? null]);
    if (!allowed.has(index.get(f) ?? null)) split.changed.push(f);
    else if (allowed.has(disk.get(f) ?? null)) split.ours.push(f);
    else split.indexOnly.push(f);
  }
  return split;
}

/** Bring the touched paths of a checkout to `commit` as far as they are ours: files and index, or the index alone. */
export async function syncTouched(repo: string, commit: string, split: TouchedSplit): Promise<string[]> {
  await syncCheckout(repo, commit, split.ours);
  if (split.indexOnly.length)
    await git(repo, ['reset', '-q', commit, '--pathspec-from-file=-', '--pathspec-file-nul'], { input: split.indexOnly.join('\0'), ...OWN_GROUP });
  return [...split.indexOnly, ...split.changed];
}

/** The blob each path's file would be (null: nothing there; a folder: never a blob). Links hash their target text, as git stores them. */
async function hashOnDisk(repo: string, files: string[]): Promise<Map<string, string | null>> {
  const out = new Map<string, string | null>();
  const regular: string[] = [];
  for (const f of files) {
    let st;
    try {
      st = lstatSync(join(repo, f));
    } catch {
      out.set(f, null);
      continue;
    }
    if (st.isSymbolicLink()) out.set(f, await git(repo, ['hash-object', '--stdin'], { input: readlinkSync(join(repo, f)) }));
    else if (st.isFile()) regular.push(f);
    else out.set(f, 'not a file');
  }
  if (regular.length) {
    const ids = (await git(repo, ['hash-object', '--stdin-paths'], { input: `${regular.join('\n')}\n` })).split('\n');
    regular.forEach((f, i) => out.set(f, ids[i] ?? 'unknown'));
  }
  return out;
}

/** Does `ancestor` lie in the history of `commit`? */
export async function isAncestor(repo: string, ancestor: string, commit: string): Promise<boolean> {
  return (await gitTry(repo, ['merge-base', '--is-ancestor', ancestor, commit])).exitCode === 0;
}

/** The store as the engine offers it: the connection, and one transaction that publishes its events. */
export interface StoreAccess {
  db: Db;
  write<T>(fn: () => T): T;
}

/**
 * The accept's record: `completed` → `accepted` with its commit and branch. Null when the task is no
 * longer `completed` (already accepted: nothing to do; changed otherwise: not ours to move).
 */
export function markAccepted(engine: StoreAccess, j: AcceptJournal, note = ''): Task | null {
  return engine.write(() => {
    const task = getTask(engine.db, j.task);
    if (task?.status !== 'completed') return null;
    const t = transition(engine.db, j.task, 'completed', 'accepted', {
      reason: `accepted by ${j.by} as ${j.newCommit.slice(0, 12)} on ${j.branch}${note}`,
      event: { commit: j.newCommit, branch: j.branch, unverified: j.unverified },
    });
    appendEvent(engine.db, j.task, 'task.accepted', { commit: j.newCommit, branch: j.branch, files: j.files.slice(0, 200), by: j.by });
    return t;
  });
}
