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
