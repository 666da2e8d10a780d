import { existsSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';
import type { EngineContext } from '../tasks/engine-context.js';
import { isSameProcess } from '../platform/proc/process.js';
import { appendEvent } from '../store/events.js';
import { getTask } from '../store/tasks.js';
import { TERMINAL } from '../tasks/types.js';
import type { PruneItem } from './prune-item.js';
import { storeCapabilities } from '../store/capabilities.js';
import { listAllocations, markReleased, type Allocation } from '../store/worktrees.js';
import { planAcceptedBranch } from './accepted-branches.js';
import { commitAll, isBranchContained } from '../platform/git/branches.js';
import { gitTry, splitZ } from '../platform/git/git-exec.js';
import { releaseBlock } from './ports.js';
import { withRepoLock } from '../platform/git/repo-lock.js';
import { planSnapshotSweep } from './snapshot-sweep.js';
import { borrowedRepo, isPrivateRepo } from './private-repo.js';
import { branchFor, dropFolder, removeWorktree } from './worktree.js';

export interface PruneOptions {
  apply: boolean;
  ttlHours: number;
  /** Also delete task branches holding commits found on no other branch. */
  force: boolean;
  now?: number;
}

export interface PruneReport {
  applied: boolean;
  ttlHours: number;
  items: PruneItem[];
}

const HOUR = 3_600_000;

/** Where a leftover git worktree folder says its repository's git dir is, from its `.git` file. */
function gitDirOf(dir: string): string | null {
  try {
    const m = /^gitdir:\s*(.+)$/m.exec(readFileSync(join(dir, '.git'), 'utf8'));
    if (!m) return null;
    const p = m[1].trim();
    return isAbsolute(p) ? p : resolve(dir, p);
  } catch {
    return null;
  }
}

/** `<common>/worktrees/<name>` → the repository's work tree (the common dir's parent for non-bare repos). */
function repoOfWorktreeGitDir(gitDir: string): string {
  return dirname(dirname(dirname(gitDir)));
}

interface Plan {
  item: PruneItem;
  run: () => Promise<void>;
}

/**
 * A task's private repository no allocation knows: its branch is brought into the repository it borrows
 * from when it holds work (unless `force`), then the folder goes.
 */
function orphanPrivateRepo(path: string, taskId: string, force: boolean): Plan {
  const repo = borrowedRepo(path);
  const branch = branchFor(taskId);
  return {
    item: { kind: 'directory', path, taskId: null, branch, reason: `orphan task repository${repo ? ` of ${repo}` : ''} (no allocation on record)`, action: 'remove' },
    run: async () => {
      if (!repo) return rmSync(path, { recursive: true, force: true });
      await withRepoLock(repo, 'prune an orphan task repository', (held) =>
        dropFolder(repo, path, branch, null, { snapshot: force ? null : 'lightworker: snapshot before pruning an orphan worktree', keepBranch: !force }, held),
      );
    },
  };
}

/**
 * Find (dry run) or remove (`apply`) what LightWorker no longer needs: worktrees of tasks that ended
 * more than `ttlHours` ago, half-done allocations whose owner died between the two phases, folders under
 * `<home>/worktrees` no allocation knows, and `git worktree list` entries whose folder is gone. A task
 * branch is deleted only when another branch contains it (or `force`); uncommitted leftovers are
 * committed to their branch before a folder goes, so no work is lost unless `force`. Read-only snapshots
 * of runners that died, free ones unused past the TTL and unrecorded snapshot folders go too.
 */
export async function pruneWorkspaces(engine: EngineContext, opts: PruneOptions): Promise<PruneReport> {
  const now = opts.now ?? Date.now();
  const dirs = existsSync(engine.home.worktrees) ? readdirSync(engine.home.worktrees) : [];
  // A fleet's store holds every host's worktrees: this host prunes only its own home's.
  const rows = listAllocations(engine.db).filter((a) => !storeCapabilities(engine.db).sharedByHosts || a.path.startsWith(engine.home.root + sep));
  const live = new Set(rows.filter((a) => a.state !== 'released').map((a) => a.path));
  const plans: Plan[] = [];
  const repos = new Set<string>();

  const removal = (a: Allocation, kind: PruneItem['kind'], reason: string): Plan[] => {
    const out: Plan[] = [];
    const item: PruneItem = { kind, path: a.path, taskId: a.taskId, branch: a.branch, reason, action: 'remove' };
    const branchItem: PruneItem = { kind: 'branch', path: null, taskId: a.taskId, branch: a.branch, reason: '', action: 'keep' };
    out.push({
      item,
      run: async () => {
        const r = await removeWorktree(engine, a, {
          reason: `pruned: ${reason}`,
          deleteBranch: true,
          force: opts.force,
          expect: { state: a.state, createdAt: a.createdAt },
        });
        if (r.skipped) throw new Error('the allocation changed meanwhile; left alone');
        branchItem.action = r.branchDeleted ? 'remove' : 'keep';
        if (!r.branchDeleted) branchItem.reason = 'holds commits found on no other branch; kept (use --force to delete)';
        branchItem.done = true;
      },
    });
    return out.concat({ item: branchItem, run: async () => {} });
  };

  for (const a of rows) {
    if (existsSync(a.repo)) repos.add(a.repo);
    if (a.state === 'allocating') {
      if (isSameProcess(a.ownerPid, a.ownerStart)) continue; // being allocated right now
      plans.push(...removal(a, 'allocation', `half-done allocation: its process (pid ${a.ownerPid}) died between the two phases`));
    } else if (a.state === 'ready') {
      const task = getTask(engine.db, a.taskId);
      if (!existsSync(a.path)) {
        plans.push({
          item: {
            kind: 'worktree',
            path: a.path,
            taskId: a.taskId,
            branch: a.branch,
            reason: 'worktree folder is missing on disk',
            action: 'remove',
          },
          run: async () => {
            if (existsSync(a.repo)) await withRepoLock(a.repo, 'prune worktrees', () => gitTry(a.repo, ['worktree', 'prune']));
            engine.write(() => {
              markReleased(engine.db, a.taskId, 'missing on disk');
              releaseBlock(engine.db, a.taskId);
              appendEvent(engine.db, a.taskId, 'worktree.removed', { path: a.path, reason: 'missing on disk' });
            });
          },
        });
        continue;
      }
      if (!task) {
        plans.push(...removal(a, 'worktree', 'its task no longer exists'));
        continue;
      }
      if (!TERMINAL.has(task.status)) continue;
      const ended = task.endedAt ?? a.readyAt ?? a.createdAt;
      const ageH = (now - ended) / HOUR;
      if (ageH < opts.ttlHours) continue;
      plans.push(...removal(a, 'worktree', `task ${task.status} ${ageH.toFixed(1)} h ago (TTL ${opts.ttlHours} h)`));
    }
  }

  for (const name of dirs) {
    const path = join(engine.home.worktrees, name);
    if (live.has(path)) continue;
    try {
      if (!statSync(path).isDirectory()) continue;
    } catch {
      continue;
    }
    if (isPrivateRepo(path)) {
      plans.push(orphanPrivateRepo(path, name, opts.force));
      continue;
    }
    const gitDir = gitDirOf(path);
    const repo = gitDir ? repoOfWorktreeGitDir(gitDir) : null;
    if (repo && existsSync(repo)) repos.add(repo);
    plans.push({
      item: {
        kind: 'directory',
        path,
        taskId: null,
        branch: null,
        reason: gitDir ? `orphan git worktree of ${repo} (no allocation on record)` : 'orphan folder (no allocation on record)',
        action: 'remove',
      },
      run: async () => {
        const remove = async () => {
          if (gitDir && !opts.force) await commitAll(path, 'lightworker: snapshot before pruning an orphan worktree').catch(() => null);
          rmSync(path, { recursive: true, force: true });
          if (repo && existsSync(repo)) await gitTry(repo, ['worktree', 'prune']);
        };
        if (repo && existsSync(repo)) await withRepoLock(repo, 'prune an orphan worktree', remove);
        else await remove();
      },
    });
  }

  // Reconcile with git: registered worktrees under our home whose folder is gone. git prints resolved
  // paths (macOS /var → /private/var), so compare against both spellings of the folder.
  const worktreesReal = existsSync(engine.home.worktrees) ? realpathSync(engine.home.worktrees) : engine.home.worktrees;
  for (const repo of repos) {
    const r = await gitTry(repo, ['worktree', 'list', '--porcelain', '-z']);
    if (r.exitCode !== 0) continue;
    for (const line of splitZ(r.stdout)) {
      if (!line.startsWith('worktree ')) continue;
      const p = line.slice(9);
      if (
        !(p.startsWith(engine.home.worktrees + sep) || p.startsWith(worktreesReal + sep)) ||
        existsSync(p) ||
        plans.some((x) => x.item.path === p)
      )
        continue;
      plans.push({
        item: {
          kind: 'git-worktree',
          path: p,
          taskId: null,
          branch: null,
          reason: `registered in ${repo} but missing on disk (git worktree prune)`,
          action: 'remove',
        },
        run: async () => {
          await withRepoLock(repo, 'prune worktrees', () => gitTry(repo, ['worktree', 'prune']));
        },
      });
    }
  }

  // Dry run: say which branches would be kept.
  for (const p of plans) {
    const it = p.item;
    if (it.kind !== 'branch' || !it.taskId) continue;
    const a = rows.find((x) => x.taskId === it.taskId)!;
    const contained = !existsSync(a.repo) || (await isBranchContained(a.repo, a.branch, a.baseCommit));
    it.action = contained || opts.force ? 'remove' : 'keep';
    it.reason = contained
      ? 'holds no commits beyond other branches'
      : opts.force
        ? 'holds commits found on no other branch, deleted because of --force'
        : 'holds commits found on no other branch; kept (use --force to delete)';
  }

  // Branches accept kept in the user's repository (the worktree went, the branch stayed).
  for (const a of rows) {
    if (a.state !== 'released' || !existsSync(a.repo)) continue;
    const plan = await planAcceptedBranch(engine, a, opts.force);
    if (plan) plans.push(plan);
  }

  // Read-only snapshots: of runners that died, unused past the TTL, or left without a record.
  for (const s of planSnapshotSweep(engine, { ttlHours: opts.ttlHours, now, orphans: true })) {
    plans.push({ item: { kind: 'snapshot', path: s.path, taskId: null, branch: null, reason: s.reason, action: 'remove' }, run: async () => s.run() });
  }

  if (opts.apply) {
    for (const p of plans) {
      try {
        await p.run();
        if (p.item.kind !== 'branch') p.item.done = true;
      } catch (e) {
        p.item.done = false;
        p.item.error = (e as Error).message;
      }
    }
  }
  return { applied: opts.apply, ttlHours: opts.ttlHours, items: plans.map((p) => p.item) };
}
