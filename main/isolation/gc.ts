import { existsSync, lstatSync, readdirSync, rmSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join, sep } from 'node:path';
import type { EngineContext } from '../tasks/engine-context.js';
import { signWithHomeKey } from '../tasks/secrets.js';
import { deleteTreeRows, listEndedTrees, listTreeTasks, measureTree, missingTaskIds, type TreeTask } from '../store/gc.js';
import { getAllocation } from '../store/worktrees.js';
import { storeCapabilities } from '../store/capabilities.js';
import { branchTip, isBranchContained } from '../platform/git/branches.js';
import { gitTry } from '../platform/git/git-exec.js';
import { withRepoLock } from '../platform/git/repo-lock.js';
import { isPrivateRepo, privateTip } from './private-repo.js';
import { removeWorktree } from './worktree.js';

export interface GcOptions {
  /** Trees whose last task ended longer ago than this (ms) go. */
  olderThanMs: number;
  /** The age as the person wrote it (`30d`), recorded in each tombstone. */
  olderThan: string;
  apply: boolean;
  /** Delete trees whose branches or worktrees hold work nobody accepted or merged, too. */
  force: boolean;
  now?: number;
  /** At most this many trees in one pass (the automatic retention sweep keeps its passes short). */
  limit?: number;
}

/** One tree gc found: whether it goes, and what it holds. */
export interface GcTree {
  rootId: string;
  tasks: number;
  events: number;
  /** Bytes it holds: its rows in the store (text columns) plus its files (artifacts, logs, worktrees). */
  bytes: number;
  endedAt: number;
  action: 'delete' | 'keep';
  reason: string;
  /** Filled when applied. */
  done?: boolean;
  error?: string;
  tombstone?: number;
}

export interface GcReport {
  applied: boolean;
  olderThan: string;
  cutoff: number;
  trees: GcTree[];
  /** Per-task folders under artifacts/ whose task is gone (a gc interrupted between rows and files). */
  orphans: { path: string; bytes: number; done?: boolean }[];
  totals: { trees: number; tasks: number; events: number; bytes: number; kept: number };
  durationMs: number;
}

/** Bytes under `path` (files only; symlinks not followed), 0 when it does not exist. */
export function bytesUnder(path: string): number {
  let st;
  try {
    st = lstatSync(path);
  } catch {
    return 0;
  }
  if (!st.isDirectory()) return st.isFile() ? st.size : 0;
  let n = 0;
  for (const name of readdirSync(path)) n += bytesUnder(join(path, name));
  return n;
}

/**
 * Why a task's work must stay (it is neither accepted nor merged anywhere), or null when deleting its
 * tree loses nothing: a worktree with uncommitted changes, a private repository whose branch moved past
 * its base, a copy folder still there, or a branch in the repository that no other branch contains.
 */
async function unacceptedWork(t: TreeTask): Promise<string | null> {
  const a = t.alloc;
  if (!a || t.status === 'accepted') return null;
  if (existsSync(a.path)) {
    if (a.copyOf !== null) return `task ${t.id}: its copy ${a.path} was never accepted`;
    if (isPrivateRepo(a.path)) {
      const tip = await privateTip(a.path, a.branch).catch(() => null);
      if (tip && tip !== a.baseCommit) return `task ${t.id}: branch ${a.branch} holds commits nobody accepted`;
    } else {
      const st = await gitTry(a.path, ['status', '--porcelain', '--untracked-files=normal']);
      if (st.exitCode === 0 && st.stdout.trim()) return `task ${t.id}: its worktree ${a.path} has uncommitted changes`;
    }
  }
  if (existsSync(a.repo) && a.copyOf === null && !(await isBranchContained(a.repo, a.branch, a.baseCommit))) {
    return `task ${t.id}: branch ${a.branch} holds commits found on no other branch (unaccepted, unmerged work)`;
  }
  return null;
}

/** Remove a task's worktree (when still allocated) and its branch, then its own folder under artifacts/. */
async function removeTaskFiles(engine: EngineContext, t: TreeTask): Promise<void> {
  const alloc = getAllocation(engine.db, t.id);
  if (alloc && alloc.state !== 'released') await removeWorktree(engine, alloc, { reason: 'gc: its tree ended long ago', deleteBranch: true, force: true, snapshot: false });
  else if (t.alloc && t.alloc.copyOf === null && existsSync(t.alloc.repo) && (await branchTip(t.alloc.repo, t.alloc.branch))) {
    const { repo, branch } = t.alloc;
    await withRepoLock(repo, `gc: delete the branch of ${t.id}`, () => gitTry(repo, ['branch', '-D', branch]));
  }
  if (t.alloc && existsSync(t.alloc.path) && t.alloc.path.startsWith(engine.home.worktrees)) rmSync(t.alloc.path, { recursive: true, force: true });
}

/**
 * Find (dry run) or delete (`apply`) task trees that ended more than `olderThanMs` ago: their rows, events,
 * artifacts and logs (the task's folder under artifacts/), worktrees and branches. A tree whose work
 * nobody accepted or merged is kept unless `force`, and so is one a task of another tree depends on.
 * Each deleted tree leaves a signed tombstone in the event log, so `audit verify` stays clean and names
 * what went. Files go first, then the rows (one transaction per tree, which checks the tree again):
 * a crash in between leaves an ended tree the next pass finishes, never rows pointing at lost files.
 */
export async function collectGarbage(engine: EngineContext, opts: GcOptions): Promise<GcReport> {
  const started = performance.now();
  const now = opts.now ?? Date.now();
  const cutoff = now - opts.olderThanMs;
  const trees: GcTree[] = [];
  const removing: Promise<void>[] = [];
  for (const tree of listEndedTrees(engine.db, cutoff, opts.limit ?? 100_000)) {
    const tasks = listTreeTasks(engine.db, tree.rootId);
    const rows = measureTree(engine.db, tree.rootId);
    const files = tasks.reduce((n, t) => n + bytesUnder(join(engine.home.artifacts, t.id)) + (t.alloc && t.alloc.state !== 'released' ? bytesUnder(t.alloc.path) : 0), 0);
    const item: GcTree = { rootId: tree.rootId, tasks: tree.tasks, events: rows.events, bytes: rows.bytes + files, endedAt: tree.endedAt, action: 'delete', reason: `ended ${new Date(tree.endedAt).toISOString()}` };
    trees.push(item);
    const elsewhere = storeCapabilities(engine.db).sharedByHosts ? tasks.find((t) => t.alloc && !t.alloc.path.startsWith(engine.home.root + sep)) : undefined;
    if (elsewhere) {
      // A fleet: that worktree (and any work in it) is on another host, whose own gc looks at it.
      Object.assign(item, { action: 'keep', reason: `task ${elsewhere.id}'s worktree ${elsewhere.alloc!.path} is on another host; gc there` });
      continue;
    }
    if (rows.dependents > 0) {
      Object.assign(item, { action: 'keep', reason: `${rows.dependents} task(s) of other trees depend on it` });
      continue;
    }
    for (const t of tasks) {
      const work = await unacceptedWork(t);
      if (!work) continue;
      if (opts.force) item.reason += `; deleted with unaccepted work because of --force (${work})`;
      else Object.assign(item, { action: 'keep', reason: `${work}; kept (accept or merge it, or pass --force)` });
      break;
    }
    if (!opts.apply || item.action !== 'delete') continue;
    try {
      for (const t of tasks) await removeTaskFiles(engine, t);
      const gone = engine.write(() => deleteTreeRows(engine.db, tree.rootId, cutoff, opts.olderThan, (text) => signWithHomeKey(engine.home.root, text)));
      if (!gone) Object.assign(item, { action: 'keep', reason: 'changed meanwhile (a task was retried or linked); left alone' });
      else {
        item.tombstone = gone.tombstone;
        item.events = gone.events;
        // Off the event loop and side by side with the next trees: on a busy disk the unlinks wait on
        // I/O, not CPU. A crash before they finish leaves folders the orphan sweep below takes next time.
        removing.push(...tasks.map((t) => rm(join(engine.home.artifacts, t.id), { recursive: true, force: true }).catch(() => undefined)));
        if (removing.length >= 64) await Promise.all(removing.splice(0));
      }
      item.done = Boolean(gone);
    } catch (e) {
      item.done = false;
      item.error = (e as Error).message;
    }
  }
  await Promise.all(removing);
  const orphans = findOrphanFolders(engine, cutoff);
  if (opts.apply) {
    for (const o of orphans) {
      rmSync(o.path, { recursive: true, force: true });
      o.done = true;
    }
  }
  const going = trees.filter((t) => t.action === 'delete' && (!opts.apply || t.done));
  return {
    applied: opts.apply,
    olderThan: opts.olderThan,
    cutoff,
    trees,
    orphans,
    totals: {
      trees: going.length,
      tasks: going.reduce((n, t) => n + t.tasks, 0),
      events: going.reduce((n, t) => n + t.events, 0),
      bytes: going.reduce((n, t) => n + t.bytes, 0) + orphans.reduce((n, o) => n + o.bytes, 0),
      kept: trees.length - going.length,
    },
    durationMs: Math.round(performance.now() - started),
  };
}

/** Folders under artifacts/ named after a task that no longer exists, untouched since the cutoff. */
function findOrphanFolders(engine: EngineContext, cutoff: number): { path: string; bytes: number; done?: boolean }[] {
  if (!existsSync(engine.home.artifacts)) return [];
  const names = readdirSync(engine.home.artifacts).filter((n) => /^[0-9A-HJKMNP-TV-Z]{26}$/.test(n));
  const out: { path: string; bytes: number }[] = [];
  for (let i = 0; i < names.length; i += 500) {
    for (const id of missingTaskIds(engine.db, names.slice(i, i + 500))) {
      const path = join(engine.home.artifacts, id);
      try {
        if (statSync(path).isDirectory() && statSync(path).mtimeMs < cutoff) out.push({ path, bytes: bytesUnder(path) });
      } catch {
        // gone meanwhile
      }
    }
  }
  return out;
}
