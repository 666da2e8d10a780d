import { isPostgres, prep, type Db } from './db.js';
import { toColumnValues, type TaskFieldUpdate } from './tasks.js';

// A runner's writes for one attempt of a task, fenced: each applies only while the task (or its attempt
// row) still belongs to that attempt of that runner, so a runner that lost its lease and woke late changes
// nothing of the attempt another runner now runs. The status moves themselves are fenced in tasks/state.ts.

/** Which attempt, claimed by which runner, a runner's writes for a task belong to (its fencing token). */
export interface Fence {
  attempt: number;
  runnerId: string;
}

/** Set fields of the task (no state change) while it is still `fence`'s attempt; false when it is not. */
export function updateFencedFields(db: Db, id: string, fence: Fence, fields: TaskFieldUpdate): boolean {
  const { sets, values } = toColumnValues(fields);
  if (!sets.length) return true;
  return prep(db, `UPDATE tasks SET ${sets.join(', ')}, updated_at = ? WHERE id = ? AND attempt = ? AND runner_id = ?`).run(...values, Date.now(), id, fence.attempt, fence.runnerId).changes === 1;
}

/** The attempt row's process, once its worker spawned (only the runner that claimed the attempt writes it). */
export function recordAttemptProcess(db: Db, id: string, fence: Fence, pid: number, pidStart: string | null): void {
  prep(db, `UPDATE attempts SET status = 'running', pid = ?, pid_start = ? WHERE task_id = ? AND attempt = ? AND runner_id = ?`).run(pid, pidStart, id, fence.attempt, fence.runnerId);
}

/** The attempt row's end (only the runner that claimed the attempt writes it). */
export function endFencedAttempt(db: Db, id: string, fence: Fence, status: string, errorCode: string | null, now = Date.now()): void {
  prep(db, 'UPDATE attempts SET status = ?, error_code = ?, ended_at = ? WHERE task_id = ? AND attempt = ? AND runner_id = ?').run(status, errorCode, now, id, fence.attempt, fence.runnerId);
}

/**
 * Set fields of a task on behalf of the run that holds `task` (as read when its attempt started): fenced
 * to that attempt and runner where a runner claimed it, so a stale run's late write (a verify command's
 * pid, a session id, a worktree path) never lands on a newer attempt; false when it did not land.
 */
export function updateRunFields(db: Db, task: { id: string; attempt: number; runnerId: string | null }, fields: TaskFieldUpdate): boolean {
  if (task.runnerId === null) return updateFencedless(db, task.id, fields);
  return updateFencedFields(db, task.id, { attempt: task.attempt, runnerId: task.runnerId }, fields);
}

function updateFencedless(db: Db, id: string, fields: TaskFieldUpdate): boolean {
  const { sets, values } = toColumnValues(fields);
  if (!sets.length) return true;
  return prep(db, `UPDATE tasks SET ${sets.join(', ')}, updated_at = ? WHERE id = ?`).run(...values, Date.now(), id).changes === 1;
}

/**
 * Is the task still `fence`'s attempt, claimed by its runner? On PostgreSQL its row is locked (FOR SHARE)
 * until the caller's transaction ends, so no move to another attempt commits between this look and what
 * the caller writes after it.
 */
export function fenceHolds(db: Db, id: string, fence: Fence): boolean {
  return prep(db, `SELECT 1 AS ok FROM tasks WHERE id = ? AND attempt = ? AND runner_id = ?${isPostgres(db) ? ' FOR SHARE' : ''}`).get(id, fence.attempt, fence.runnerId) !== undefined;
}
