import { prep, type Db } from '../store/db.js';

export interface WorkCounts {
  /** Tasks a runner owns (starting, running, verifying). */
  active: number;
  /** Queued tasks whose dependencies have all completed. */
  runnable: number;
  /** Queued tasks still waiting on a dependency that is queued or running. */
  pending: number;
}

/** What is left to do in this home; approval-gated work does not count. */
export function workCounts(db: Db): WorkCounts {
  return prep(
    db,
    `SELECT
       (SELECT COUNT(*) FROM tasks WHERE status IN ('starting','running','verifying')) AS active,
       (SELECT COUNT(*) FROM tasks t WHERE t.status = 'queued' AND NOT EXISTS (
          SELECT 1 FROM task_deps d JOIN tasks p ON p.id = d.depends_on
          WHERE d.task_id = t.id AND p.status NOT IN ('completed','accepted'))) AS runnable,
       (SELECT COUNT(*) FROM tasks t WHERE t.status = 'queued' AND EXISTS (
          SELECT 1 FROM task_deps d JOIN tasks p ON p.id = d.depends_on
          WHERE d.task_id = t.id AND p.status IN ('queued','starting','running','verifying'))) AS pending`,
  ).get() as WorkCounts;
}

/** Nothing runs and nothing queued can run (tasks awaiting approval, or queued behind one, don't count). */
export function isIdle(db: Db): boolean {
  const c = workCounts(db);
  return c.active === 0 && c.runnable === 0 && c.pending === 0;
}
