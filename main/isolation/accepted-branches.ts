import type { EngineContext } from '../tasks/engine-context.js';
import { appendEvent, listEvents } from '../store/events.js';
import { getTask } from '../store/tasks.js';
import { branchTip, isBranchContained } from '../platform/git/branches.js';
import { gitTry, splitZ } from '../platform/git/git-exec.js';
import { withRepoLock } from '../platform/git/repo-lock.js';
import type { PruneItem } from './prune-item.js';
import type { Allocation } from '../store/worktrees.js';

/**
 * Is every change the task branch holds (from `base` to `tip`) in `commit`, and is `commit` on a branch?
 * Accept squashes, so the branch's tip is never an ancestor of the target; instead: the same files
 * changed, and `commit` has exactly the tip's version of each. Anything else (the target edited those
 * files too, someone committed on the task branch since, the accepted commit was reset away) is
 * "not merged", so the branch is kept.
 */
async function isSquashedInto(repo: string, branch: string, base: string, tip: string, commit: string): Promise<boolean> {
  const on = await gitTry(repo, ['for-each-ref', '--format=%(refname:short)', '--contains', commit, 'refs/heads/']);
  if (on.exitCode !== 0 || !on.stdout.split('\n').some((b) => b && b !== branch)) return false;
  const names = async (...range: string[]) => {
    const r = await gitTry(repo, ['diff', '--name-only', '-z', '--no-renames', ...range]);
    return r.exitCode === 0 ? splitZ(r.stdout).sort() : null;
  };
  const ours = await names(base, tip);
  const accepted = await names(`${commit}^`, commit);
  if (!ours || !accepted || ours.join('\0') !== accepted.join('\0')) return false;
  if (!ours.length) return true;
  const same = await gitTry(repo, ['diff', '--quiet', '--no-renames', tip, commit, '--', ...ours.map((p) => `:(literal)${p}`)]);
  return same.exitCode === 0;
}

/**
 * The prune entry for an accepted task's `lightworker/<id>` branch that accept kept in the user's
 * repository: removed when nothing is lost (another branch contains it, or its whole change is the
 * accepted commit on a branch), otherwise kept unless `force`. Null when the branch is already gone.
 */
export async function planAcceptedBranch(
  engine: EngineContext,
  a: Allocation,
  force: boolean,
): Promise<{ item: PruneItem; run: () => Promise<void> } | null> {
  if (getTask(engine.db, a.taskId)?.status !== 'accepted') return null;
  const tip = await branchTip(a.repo, a.branch);
  if (!tip) return null;
  const accepted = listEvents(engine.db, { taskId: a.taskId, types: ['task.accepted'], newest: true, limit: 1 }).events[0];
  const commit = typeof accepted?.payload.commit === 'string' ? accepted.payload.commit : null;
  const merged =
    (await isBranchContained(a.repo, a.branch, a.baseCommit)) || (commit !== null && (await isSquashedInto(a.repo, a.branch, a.baseCommit, tip, commit)));
  const item: PruneItem = {
    kind: 'branch',
    path: null,
    taskId: a.taskId,
    branch: a.branch,
    action: merged || force ? 'remove' : 'keep',
    reason: merged
      ? `task accepted; its changes are on ${accepted?.payload.branch ? String(accepted.payload.branch) : 'another branch'}`
      : force
        ? 'task accepted, but the branch holds changes found on no other branch; deleted because of --force'
        : 'task accepted, but the branch holds changes found on no other branch; kept (use --force to delete)',
  };
  return {
    item,
    run: async () => {
      if (item.action !== 'remove') return; // reported as kept
      await withRepoLock(a.repo, `prune branch ${a.branch}`, async () => {
        // Decided on an earlier read: a branch that moved since is someone's new work.
        if ((await branchTip(a.repo, a.branch)) !== tip) throw new Error('the branch moved meanwhile; left alone');
        const r = await gitTry(a.repo, ['branch', '-D', a.branch]);
        if (r.exitCode !== 0) throw new Error(r.stderr.trim() || `git branch -D exited ${r.exitCode}`);
      });
      item.done = true;
      engine.write(() => appendEvent(engine.db, a.taskId, 'branch.removed', { branch: a.branch, tip, reason: item.reason }));
    },
  };
}
