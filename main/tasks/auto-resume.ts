import type { Config } from '../core/config.js';
import type { Db } from '../store/db.js';
import { appendEvent } from '../store/events.js';
import { countTaskStrategyMoves } from '../store/task-history.js';
import { AUTO_RESUME_STRATEGY, lastSessionOf, startNewAttempt } from './ops.js';
import type { Task } from './types.js';

/**
 * A task orphaned because its runner was lost (killed, frozen past its lease, cut off, stopped without
 * ending it) did nothing wrong: the fault was the infrastructure's. Where continuing it is safe it is
 * resumed at once, as `retry --strategy resume` would, but as the `auto_resume` strategy, which the
 * tree's retry budget does not count (tasks/ops.ts counts only the retry strategies).
 *
 * Safe means: a read-only kind (plan, explore, review: no worktree, any runner may continue it), or an
 * execute task on the host that holds its worktree (pinned there: only a runner on that host claims it,
 * store/fleet-runners.ts). A task that keeps losing its runner (a worker that takes its runner down with
 * it) is resumed at most AUTO_RESUME_LIMIT times; after that it stays orphaned for a person to decide.
 */
export const AUTO_RESUME_LIMIT = 3;

/**
 * {@link autoResumeOrphan}, and where the setting is on but the task was left, a `task.auto_resume_skipped`
 * event saying why. Used by recovery (a lost runner's tasks) and by a runner that orphans its own task
 * after losing its lease (runner/run-task.ts): both orphans have the same cause and get the same decision.
 */
export function resumeOrphanOrSay(db: Db, config: Config, t: Task, host: string | null): { task: Task } | { left: string } {
  const resumed = autoResumeOrphan(db, config, t, host);
  if ('left' in resumed && config.scheduler.auto_resume_orphans) appendEvent(db, t.id, 'task.auto_resume_skipped', { reason: resumed.left });
  return resumed;
}

/**
 * Resume `t` (just moved to orphaned by recovery or by its own runner, in the caller's write transaction) when the setting,
 * its kind and its count of automatic resumes allow. `host` is the lost runner's host in a fleet (null
 * on one home, where every runner is on this machine). Returns the queued task, or why it was left.
 */
export function autoResumeOrphan(db: Db, config: Config, t: Task, host: string | null): { task: Task } | { left: string } {
  if (!config.scheduler.auto_resume_orphans) return { left: 'scheduler.auto_resume_orphans is off' };
  if (t.cancelRequested) return { left: 'a cancel was requested' };
  if (t.kind === 'execute' && host === '') return { left: 'the host holding its worktree is unknown' };
  const done = countTaskStrategyMoves(db, t.id, [AUTO_RESUME_STRATEGY]);
  if (done >= AUTO_RESUME_LIMIT) return { left: `it was resumed automatically ${done} times already, each time losing its runner` };
  const task = startNewAttempt(db, t, {
    strategy: AUTO_RESUME_STRATEGY,
    reason: `resumed automatically: its runner ${t.runnerId ?? '?'} was lost (not counted against the retry budget)`,
    resume: { sessionId: lastSessionOf(db, t), fromAttempt: t.attempt, interruptedBy: 'orphaned', worktree: t.kind === 'execute' ? t.worktreePath : null },
    authority: 'engine',
    event: { autoResume: done + 1 },
    // Its worktree (and branch, and session files) are on the lost runner's host: no runner elsewhere may take it.
    ...(host ? { runHost: host } : {}),
  });
  return { task };
}
