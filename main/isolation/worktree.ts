import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../core/errors.js';
import type { EngineContext } from '../tasks/engine-context.js';
import { processStartTime } from '../platform/proc/process.js';
import { appendEvent } from '../store/events.js';
import { updateRunFields } from '../store/fence.js';
import type { Task } from '../tasks/types.js';
import { branchTip, commitAll, commitAuthor, isBranchContained } from '../platform/git/branches.js';
import { git, gitTry, resolveCommit } from '../platform/git/git-exec.js';
import { checkContainment, checkDiskReserve } from '../platform/git/guards.js';
import { getAllocation, insertAllocating, markReady, markReleased, type Allocation } from '../store/worktrees.js';
import { releaseBlock } from './ports.js';
import { createPrivateRepo, exportBranch, isPrivateRepo, privateTip, sealPrivateRepo } from './private-repo.js';
import { withRepoLock, type HeldLock } from '../platform/git/repo-lock.js';

export function worktreePathFor(engine: EngineContext, taskId: string): string {
  return join(engine.home.worktrees, taskId);
}

export function branchFor(taskId: string): string {
  return `lightworker/${taskId}`;
}

export interface AllocationPlan {
  repo: string;
  path: string;
  branch: string;
  baseRef: string;
  baseCommit: string;
}

/** Checks that change nothing: containment, disk reserve, a base that resolves. */
export async function planAllocation(engine: EngineContext, task: Task, repo: string): Promise<AllocationPlan> {
  checkContainment(engine.home.root, repo);
  checkDiskReserve(engine.config, engine.home.worktrees);
  const baseRef = task.baseRef ?? 'HEAD';
  const baseCommit = await resolveCommit(repo, baseRef);
  if (!baseCommit) throw new AppError('invalid_input', `base_ref: "${baseRef}" does not name a commit in ${repo}`, { field: 'base_ref' });
  return { repo, path: worktreePathFor(engine, task.id), branch: branchFor(task.id), baseRef, baseCommit };
}

/**
 * Phase 1 of a two-phase allocation: the named `allocating` record, committed before anything touches
 * disk. A crash after this leaves a row whose owner is dead; prune sweeps it.
 */
export function recordAllocation(engine: EngineContext, task: Task, plan: AllocationPlan): void {
  engine.write(() => {
    insertAllocating(engine.db, {
      taskId: task.id,
      repo: plan.repo,
      path: plan.path,
      branch: plan.branch,
      baseRef: plan.baseRef,
      baseCommit: plan.baseCommit,
      ownerPid: process.pid,
      ownerStart: processStartTime(process.pid),
      attempt: task.attempt,
    });
  });
}

/**
 * Clear what an earlier attempt (or a crash) left at the task's path and branch, under the repository
 * lock. Work is never lost: uncommitted changes are committed first, and a branch holding commits found
 * nowhere else is kept under `lightworker/<id>-attempt-<n>`.
 */
async function clearLeftovers(engine: EngineContext, plan: AllocationPlan, previous: Allocation | null, held: HeldLock): Promise<void> {
  const hadPath = existsSync(plan.path);
  if (hadPath) await dropFolder(plan.repo, plan.path, plan.branch, previous?.baseCommit ?? null, { snapshot: 'lightworker: snapshot of an earlier attempt', keepBranch: true }, held);
  // The common case (a first attempt) has nothing to clear: skip the extra git calls.
  if (hadPath || previous) await gitTry(plan.repo, ['worktree', 'prune']);
  if (!(await branchTip(plan.repo, plan.branch))) return;
  if (!(await isBranchContained(plan.repo, plan.branch, previous?.baseCommit ?? null))) {
    const keep = `${plan.branch}-attempt-${previous?.attempt ?? 0}-${Date.now().toString(36)}`;
    await git(plan.repo, ['branch', '-m', plan.branch, keep]);
    if (previous)
      engine.write(() =>
        appendEvent(engine.db, previous.taskId, 'worktree.branch_kept', {
          branch: keep,
          reason: 'earlier attempt had commits found on no other branch',
        }),
      );
  } else {
    await gitTry(plan.repo, ['branch', '-D', plan.branch]);
  }
}

const allocating = new Set<string>();

export interface AllocationTimings {
  /** Time spent waiting for and holding the repository lock, including `git worktree add`. */
  lockedMs: number;
  /** `git worktree add` alone. */
  gitAddMs: number;
}

/**
 * Allocate the task's worktree: phase 1 record → (repository lock) clear leftovers, `git worktree add`
 * on a new branch from the base commit → phase 2 (ready, recorded on the task). A failure after phase 1
 * releases the record (and anything made on disk) before rethrowing.
 */
export async function allocateWorktree(
  engine: EngineContext,
  task: Task,
  plan: AllocationPlan,
): Promise<Allocation & { timings: AllocationTimings }> {
  if (allocating.has(task.id)) throw new AppError('conflict', `task ${task.id}: a worktree allocation is already in progress`);
  allocating.add(task.id);
  try {
    const previous = getAllocation(engine.db, task.id);
    recordAllocation(engine, task, plan);
    const timings: AllocationTimings = { lockedMs: 0, gitAddMs: 0 };
    const t0 = performance.now();
    try {
      // Leftovers are cleared under the lock (that may bring an earlier attempt's branch into the
      // repository); the private repository itself touches nothing of the user's, so it is made outside.
      // A first attempt (no record, no folder) has nothing to clear and takes no lock.
      if (previous || existsSync(plan.path)) await withRepoLock(plan.repo, `allocate worktree for ${task.id}`, (held) => clearLeftovers(engine, plan, previous, held));
      const t1 = performance.now();
      await createPrivateRepo(plan.repo, plan.path, plan.branch, plan.baseCommit, await commitAuthor(plan.repo, engine.config.git.author));
      timings.gitAddMs = performance.now() - t1;
    } catch (err) {
      const failed = getAllocation(engine.db, task.id);
      if (failed)
        await removeWorktree(engine, failed, {
          reason: `allocation failed: ${(err as Error).message}`,
          deleteBranch: true,
          snapshot: false,
        }).catch(() => undefined);
      throw err;
    }
    timings.lockedMs = performance.now() - t0;
    const ok = engine.write(() => {
      if (!markReady(engine.db, task.id)) return false;
      updateRunFields(engine.db, task, { worktreePath: plan.path, branch: plan.branch });
      return true;
    });
    if (!ok) throw new AppError('conflict', `task ${task.id}: its worktree allocation was swept while being created`);
    return { ...getAllocation(engine.db, task.id)!, timings };
  } finally {
    allocating.delete(task.id);
  }
}

export interface RemoveOptions {
  reason: string;
  /** Delete the branch too, when that loses nothing (or always, with force). */
  deleteBranch?: boolean;
  /** Delete the branch even when it holds commits found on no other branch. */
  force?: boolean;
  /** Commit leftover uncommitted changes to the branch before removing (default true). */
  snapshot?: boolean;
  /** Only act if the allocation is still this one (prune decided on an earlier read). */
  expect?: { state: Allocation['state']; createdAt: number };
}

/**
 * Remove a task's worktree (under the repository lock), free its ports and mark the allocation released.
 * Uncommitted changes are committed to the branch first unless `force`. Returns whether the branch was deleted.
 */
export async function removeWorktree(
  engine: EngineContext,
  alloc: Allocation,
  opts: RemoveOptions,
): Promise<{ branchDeleted: boolean; skipped: boolean }> {
  let branchDeleted = false;
  // A copy (copy isolation) is its own repository: removing it is removing the folder.
  const standalone = alloc.copyOf !== null || !existsSync(alloc.repo);
  let acted = standalone;
  const stillSame = () => {
    if (!opts.expect) return true;
    const now = getAllocation(engine.db, alloc.taskId);
    return now?.state === opts.expect.state && now.createdAt === opts.expect.createdAt;
  };
  if (standalone) {
    // A copy, or the repository itself is gone: only our folder is left to clean.
    rmSync(alloc.path, { recursive: true, force: true });
  } else
    await withRepoLock(alloc.repo, `remove worktree of ${alloc.taskId}`, async (held) => {
      if (!stillSame()) return;
      acted = true;
      if (existsSync(alloc.path)) {
        const snapshot = !opts.force && opts.snapshot !== false ? `lightworker: snapshot before removing the worktree (${opts.reason})` : null;
        await dropFolder(alloc.repo, alloc.path, alloc.branch, alloc.baseCommit, { snapshot, keepBranch: !(opts.force && opts.deleteBranch) }, held);
      }
      await gitTry(alloc.repo, ['worktree', 'prune']);
      if (opts.deleteBranch && (opts.force || (await isBranchContained(alloc.repo, alloc.branch, alloc.baseCommit)))) {
        // A private repository's branch that held nothing never reached the repository: gone with its folder.
        branchDeleted = (await gitTry(alloc.repo, ['branch', '-D', alloc.branch])).exitCode === 0 || !(await branchTip(alloc.repo, alloc.branch));
      }
    });
  if (!acted) return { branchDeleted: false, skipped: true };
  engine.write(() => {
    markReleased(engine.db, alloc.taskId, opts.reason);
    releaseBlock(engine.db, alloc.taskId);
    appendEvent(engine.db, alloc.taskId, 'worktree.removed', {
      path: alloc.path,
      branch: alloc.branch,
      reason: opts.reason,
      branchDeleted,
    });
  });
  return { branchDeleted, skipped: false };
}

/**
 * Remove a task's folder (caller holds the repository lock): a private repository's branch is first
 * brought into the user's repository when it holds work (`keepBranch`; its tip is not the base), so
 * removing the folder never loses a commit; an old-style `git worktree` is removed through git.
 * `snapshot` commits leftover uncommitted changes first (its message), unless null.
 */
export async function dropFolder(
  repo: string,
  path: string,
  branch: string,
  baseCommit: string | null,
  opts: { snapshot: string | null; keepBranch: boolean },
  held: HeldLock,
): Promise<void> {
  if (isPrivateRepo(path)) {
    await sealPrivateRepo(repo, path).catch(() => undefined);
    if (opts.snapshot) await commitAll(path, opts.snapshot).catch(() => null);
    const tip = await privateTip(path, branch).catch(() => null);
    if (opts.keepBranch && tip && tip !== baseCommit) await exportBranch(repo, path, branch, held);
    rmSync(path, { recursive: true, force: true });
    return;
  }
  if (opts.snapshot && existsSync(join(path, '.git'))) await commitAll(path, opts.snapshot).catch(() => null);
  const r = await gitTry(repo, ['worktree', 'remove', '--force', '--force', path]);
  if (r.exitCode !== 0) rmSync(path, { recursive: true, force: true });
}
