import { prep, type Db } from './db.js';

/**
 * Query module for `task_secrets` (a task's original fields, where redaction changed them) and
 * `sealed_texts` (one original text per task and key). Only ciphertext passes here; tasks/secrets.ts
 * encrypts and decrypts.
 */

export function upsertTaskSecrets(db: Db, taskId: string, ciphertext: Buffer): void {
  prep(db, 'INSERT INTO task_secrets (task_id, ciphertext) VALUES (?, ?) ON CONFLICT(task_id) DO UPDATE SET ciphertext = excluded.ciphertext').run(taskId, ciphertext);
}

export function taskSecretsOf(db: Db, taskId: string): Buffer | null {
  const row = prep(db, 'SELECT ciphertext FROM task_secrets WHERE task_id = ?').get(taskId) as { ciphertext: Buffer } | undefined;
  return row?.ciphertext ?? null;
}

export function hasTaskSecrets(db: Db, taskId: string): boolean {
  return prep(db, 'SELECT 1 FROM task_secrets WHERE task_id = ?').get(taskId) !== undefined;
}

export function upsertSealedText(db: Db, taskId: string, key: string, ciphertext: Buffer): void {
  prep(db, 'INSERT INTO sealed_texts (task_id, key, ciphertext) VALUES (?, ?, ?) ON CONFLICT(task_id, key) DO UPDATE SET ciphertext = excluded.ciphertext').run(taskId, key, ciphertext);
}

export function deleteSealedText(db: Db, taskId: string, key: string): void {
  prep(db, 'DELETE FROM sealed_texts WHERE task_id = ? AND key = ?').run(taskId, key);
}

export function sealedTextOf(db: Db, taskId: string, key: string): Buffer | null {
  const row = prep(db, 'SELECT ciphertext FROM sealed_texts WHERE task_id = ? AND key = ?').get(taskId, key) as { ciphertext: Buffer } | undefined;
  return row?.ciphertext ?? null;
}

/** Every sealed blob of a task: its original fields and each sealed text. */
export function sealedBlobsOf(db: Db, taskId: string): Buffer[] {
  const rows = prep(db, 'SELECT ciphertext FROM task_secrets WHERE task_id = ? UNION ALL SELECT ciphertext FROM sealed_texts WHERE task_id = ?').all(taskId, taskId) as { ciphertext: Buffer }[];
  return rows.map((r) => r.ciphertext);
}

/** Queued tasks holding sealed texts (at most `max`), for doctor's check that this home can open them. */
export function queuedSealedTaskIds(db: Db, max = 500): string[] {
  const rows = prep(
    db,
    `SELECT t.id FROM tasks t WHERE t.status = 'queued'
       AND (EXISTS (SELECT 1 FROM task_secrets s WHERE s.task_id = t.id) OR EXISTS (SELECT 1 FROM sealed_texts x WHERE x.task_id = t.id))
     ORDER BY t.id LIMIT ?`,
  ).all(max) as { id: string }[];
  return rows.map((r) => r.id);
}
