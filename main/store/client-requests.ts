import { prep, type Db } from './db.js';

/** A caller's request id and what its first call was: the command, a hash per input field, the tasks made. */
export interface ClientRequest {
  id: string;
  command: string;
  fields: Record<string, string>;
  taskIds: string[];
  createdAt: number;
}

interface Row {
  id: string;
  command: string;
  fields: string;
  task_ids: string;
  created_at: number;
}

/**
 * Take the id for this call, in the caller's transaction: true when it was free. On PostgreSQL a second
 * transaction inserting the same id waits for the first to commit and then inserts nothing, so exactly one
 * of two concurrent calls creates the tasks.
 */
export function claimClientRequest(db: Db, r: { id: string; command: string; fields: Record<string, string> }, now = Date.now()): boolean {
  const res = prep(db, 'INSERT INTO client_requests (id, command, fields, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING').run(
    r.id,
    r.command,
    JSON.stringify(r.fields),
    now,
  );
  return res.changes === 1;
}

export function getClientRequest(db: Db, id: string): ClientRequest | null {
  const row = prep(db, 'SELECT * FROM client_requests WHERE id = ?').get(id) as Row | undefined;
  if (!row) return null;
  return { id: row.id, command: row.command, fields: JSON.parse(row.fields) as Record<string, string>, taskIds: JSON.parse(row.task_ids) as string[], createdAt: row.created_at };
}

export function setClientRequestTasks(db: Db, id: string, taskIds: readonly string[]): void {
  prep(db, 'UPDATE client_requests SET task_ids = ? WHERE id = ?').run(JSON.stringify(taskIds), id);
}
