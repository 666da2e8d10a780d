import { prep, type Db } from './db.js';

/**
 * Questions answered from a task's events (the `events` table, read, never written here): the latest
 * payload of a kind, the session a worker last ran, the state a pause left. Payloads come back as the
 * JSON text they were stored as; callers parse them.
 */

/** The payload (JSON text) of the task's latest event of `type`, or null. */
export function latestEventPayload(db: Db, taskId: string, type: string): string | null {
  const row = prep(db, 'SELECT payload FROM events WHERE task_id = ? AND type = ? ORDER BY seq DESC LIMIT 1').get(taskId, type) as { payload: string } | undefined;
  return row?.payload ?? null;
}

/** The task's latest move into `paused`: the status it was paused from (null if none recorded) and when. */
export function latestPause(db: Db, taskId: string): { from: string | null; ts: number } | null {
  const row = prep(db, `SELECT json_extract(payload, '$.pausedFrom') AS f, ts FROM events WHERE task_id = ? AND type = 'task.status' AND json_extract(payload, '$.to') = 'paused' ORDER BY seq DESC LIMIT 1`).get(taskId) as
    | { f: string | null; ts: number }
    | undefined;
  return row ? { from: row.f, ts: row.ts } : null;
}

/** The seq of the task's latest `task.redirected` and of its latest `task.redirect_applied` (null where none). */
export function redirectSeqs(db: Db, taskId: string): { redirected: number | null; applied: number | null } {
  const row = prep(db, `SELECT MAX(CASE WHEN type = 'task.redirected' THEN seq END) AS r, MAX(CASE WHEN type = 'task.redirect_applied' THEN seq END) AS a FROM events WHERE task_id = ? AND type IN ('task.redirected', 'task.redirect_applied')`).get(taskId) as
    | { r: number | null; a: number | null }
    | undefined;
  return { redirected: row?.r ?? null, applied: row?.a ?? null };
}

/** The session id the task's latest `worker.started` that reported one carried. */
export function lastStartedSession(db: Db, taskId: string): string | null {
  const row = prep(db, `SELECT json_extract(payload, '$.sessionId') AS s FROM events WHERE task_id = ? AND type = 'worker.started' AND json_extract(payload, '$.sessionId') IS NOT NULL ORDER BY seq DESC LIMIT 1`).get(taskId) as
    | { s: string | null }
    | undefined;
  return row?.s ?? null;
}

/** The run folder the latest `worker.started` of this session reported. */
export function runDirOfSession(db: Db, taskId: string, sessionId: string): string | null {
  const row = prep(db, `SELECT json_extract(payload, '$.runDir') AS d FROM events WHERE task_id = ? AND type = 'worker.started' AND json_extract(payload, '$.sessionId') = ? AND json_extract(payload, '$.runDir') IS NOT NULL ORDER BY seq DESC LIMIT 1`).get(taskId, sessionId) as
    | { d: string }
    | undefined;
  return row?.d ?? null;
}

/** How many status moves of the task `taskId` carried one of `strategies`. */
export function countTaskStrategyMoves(db: Db, taskId: string, strategies: readonly string[]): number {
  return countMoves(db, 'e.task_id = ?', taskId, strategies);
}

/** How many status moves of the tree rooted at `rootId` carried one of `strategies`. */
export function countStrategyMoves(db: Db, rootId: string, strategies: readonly string[]): number {
  return countMoves(db, 't.root_id = ?', rootId, strategies);
}

function countMoves(db: Db, where: 'e.task_id = ?' | 't.root_id = ?', id: string, strategies: readonly string[]): number {
  const sql = `SELECT COUNT(*) AS n FROM events e JOIN tasks t ON t.id = e.task_id WHERE ${where} AND e.type = 'task.status' AND json_extract(e.payload, '$.strategy') IN (${strategies.map(() => '?').join(',')})`;
  return (prep(db, sql).get(id, ...strategies) as { n: number }).n;
}

/** The payload of the task's latest status move that carried a strategy (retry, follow-up, answer, …). */
export function latestStrategyMove(db: Db, taskId: string): string | null {
  const row = prep(db, `SELECT payload FROM events WHERE task_id = ? AND type = 'task.status' AND json_extract(payload, '$.strategy') IS NOT NULL ORDER BY seq DESC LIMIT 1`).get(taskId) as
    | { payload: string }
    | undefined;
  return row?.payload ?? null;
}

/** The payload of the task's latest `worker.usage` for this conversation thread. */
export function latestUsageOfThread(db: Db, taskId: string, thread: string): string | null {
  const row = prep(db, `SELECT payload FROM events WHERE task_id = ? AND type = 'worker.usage' AND json_extract(payload, '$.thread.thread') = ? ORDER BY seq DESC LIMIT 1`).get(taskId, thread) as
    | { payload: string }
    | undefined;
  return row?.payload ?? null;
}

/** One `worker.usage` event with the model of its task. */
export interface UsageEvent {
  payload: string;
  task_model: string | null;
}

export function usageEventsOfTask(db: Db, taskId: string): UsageEvent[] {
  return prep(db, `SELECT e.payload, t.model AS task_model FROM events e JOIN tasks t ON t.id = e.task_id WHERE e.task_id = ? AND e.type = 'worker.usage'`).all(taskId) as UsageEvent[];
}

export function usageEventsOfRoot(db: Db, rootId: string): (UsageEvent & { task_id: string })[] {
  return prep(db, `SELECT t.id AS task_id, e.payload, t.model AS task_model FROM tasks t JOIN events e ON e.task_id = t.id WHERE t.root_id = ? AND e.type = 'worker.usage'`).all(rootId) as (UsageEvent & {
    task_id: string;
  })[];
}
