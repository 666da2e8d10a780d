import { prep, type Db } from './db.js';

export interface WorkCounts {
  /** Tasks a runner owns (starting, running, verifying). */
  active: number;
  /** Queued tasks whose dependencies have all completed. */
  runnable: number;
  /** Queued tasks still waiting on a dependency that is queued or running. */
  pending: number;
}

/**
 * Tasks a runner owns or could claim now. Cheap however many tasks wait: the active tasks' index and the
 * ready set (`deps_pending`, migration 006) — `run --until-idle` asks after every change.
 */
export function claimableWork(db: Db): Pick<WorkCounts, 'active' | 'runnable'> {
  return prep(
    db,
    `SELECT
       (SELECT COUNT(*) FROM tasks WHERE status IN ('starting','running','verifying')) AS active,
       (SELECT COUNT(*) FROM tasks INDEXED BY tasks_ready WHERE status = 'queued' AND deps_pending = 0) AS runnable`,
  ).get() as Pick<WorkCounts, 'active' | 'runnable'>;
}

/** Queued tasks with a dependency that is itself queued or running (will become runnable without a person). */
function pendingCount(db: Db): number {
  return (
    prep(
      db,
      `SELECT COUNT(*) AS n FROM tasks t WHERE t.status = 'queued' AND t.deps_pending > 0 AND EXISTS (
         SELECT 1 FROM task_deps d JOIN tasks p ON p.id = d.depends_on
         WHERE d.task_id = t.id AND p.status IN ('queued','starting','running','verifying'))`,
    ).get() as { n: number }
  ).n;
}

/** What is left to do in this home; approval-gated work does not count. */
export function workCounts(db: Db): WorkCounts {
  return { ...claimableWork(db), pending: pendingCount(db) };
}

/** Nothing runs and nothing queued can run (tasks awaiting approval, or queued behind one, don't count). */
export function isIdle(db: Db): boolean {
  const c = claimableWork(db);
  return c.active === 0 && c.runnable === 0 && pendingCount(db) === 0;
}
