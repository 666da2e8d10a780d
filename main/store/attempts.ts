import { prep, type Db } from './db.js';

/** Query module for the `attempts` table: one row per attempt of a task, its process and how it ended. */

/** The attempt's worker process exists: running, with its pid and start time. */
export function markAttemptRunning(db: Db, taskId: string, attempt: number, pid: number, pidStart: string | null): void {
  prep(db, 'UPDATE attempts SET status = ?, pid = ?, pid_start = ? WHERE task_id = ? AND attempt = ?').run('running', pid, pidStart, taskId, attempt);
}

/** The attempt ended (or paused for a person: `waiting_input`), with its error code where there is one. */
export function closeAttempt(db: Db, taskId: string, attempt: number, status: string, endedAt: number, errorCode?: string | null): void {
  if (errorCode === undefined) prep(db, 'UPDATE attempts SET status = ?, ended_at = ? WHERE task_id = ? AND attempt = ?').run(status, endedAt, taskId, attempt);
  else prep(db, 'UPDATE attempts SET status = ?, error_code = ?, ended_at = ? WHERE task_id = ? AND attempt = ?').run(status, errorCode, endedAt, taskId, attempt);
}

/** Tasks in flight (starting, running, verifying) whose runner is one of `runnerIds`. */
export function inFlightTasksOf(db: Db, runnerIds: string[]): string[] {
  return (db.prepare(`SELECT id FROM tasks WHERE status IN ('starting', 'running', 'verifying') AND runner_id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(runnerIds)) as { id: string }[]).map((r) => r.id);
}

/** Tasks in flight whose runner is not `holder` (or unknown). */
export function inFlightTasksNotOf(db: Db, holder: string): string[] {
  return (db.prepare(`SELECT id FROM tasks WHERE status IN ('starting', 'running', 'verifying') AND (runner_id IS NULL OR runner_id != ?)`).all(holder) as { id: string }[]).map((r) => r.id);
}

/** Milliseconds the task's ended (or paused) attempts ran, from claim to end: its wall time so far. */
export function attemptsWallMs(db: Db, taskId: string): number {
  const row = prep(db, 'SELECT COALESCE(SUM(ended_at - started_at), 0) AS ms FROM attempts WHERE task_id = ? AND ended_at IS NOT NULL AND started_at IS NOT NULL').get(taskId) as { ms: number };
  return Number(row.ms) || 0;
}

/** A rate-limited attempt back in the queue: the same attempt, claimed again later (no end recorded). */
export function requeueAttempt(db: Db, taskId: string, attempt: number): void {
  prep(db, "UPDATE attempts SET status = 'queued', pid = NULL, pid_start = NULL WHERE task_id = ? AND attempt = ?").run(taskId, attempt);
}
