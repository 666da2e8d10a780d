import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { prep, type Db } from '../store/db.js';
import { redactNewRow, type NewTaskRow } from '../store/tasks.js';
import type { Task } from './types.js';

/** Fields of a task that may hold caller text, and so are redacted before they are stored. */
type SecretFields = Pick<Task, 'name' | 'objective' | 'successCriteria' | 'verify' | 'metadata'>;

const keyCache = new Map<string, Buffer>();

/** The home's 32-byte key (`secret.key`, mode 0600), created on first use. */
function homeKey(homeRoot: string): Buffer {
  const cached = keyCache.get(homeRoot);
  if (cached) return cached;
  const path = join(homeRoot, 'secret.key');
  if (!existsSync(path)) {
    try {
      writeFileSync(path, randomBytes(32), { mode: 0o600, flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  chmodSync(path, 0o600);
  const key = readFileSync(path);
  if (key.length !== 32) throw new Error(`${path} is not a 32-byte key`);
  keyCache.set(homeRoot, key);
  return key;
}

function pick(t: SecretFields): SecretFields {
  return { name: t.name, objective: t.objective, successCriteria: t.successCriteria, verify: t.verify, metadata: t.metadata };
}

/**
 * Redact a new task's text fields in place and return the originals when anything changed
 * (to be sealed with `sealSecrets`), or null when the task held no secrets.
 */
export function redactNewTask(row: NewTaskRow): SecretFields | null {
  const original = pick(row);
  Object.assign(row, pick(redactNewRow(row)));
  return JSON.stringify(pick(row)) === JSON.stringify(original) ? null : original;
}

/** Store the originals encrypted (AES-256-GCM) with the home's key. */
export function sealSecrets(db: Db, homeRoot: string, taskId: string, original: SecretFields): void {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', homeKey(homeRoot), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(original), 'utf8'), cipher.final()]);
  const blob = Buffer.concat([iv, cipher.getAuthTag(), body]);
  prep(db, 'INSERT OR REPLACE INTO task_secrets (task_id, ciphertext) VALUES (?, ?)').run(taskId, blob);
}

/** The task as the runner needs it: with the caller's original text where it was redacted. */
export function unsealTask(db: Db, homeRoot: string, task: Task): Task {
  const row = prep(db, 'SELECT ciphertext FROM task_secrets WHERE task_id = ?').get(task.id) as { ciphertext: Buffer } | undefined;
  if (!row) return task;
  const blob = row.ciphertext;
  const decipher = createDecipheriv('aes-256-gcm', homeKey(homeRoot), blob.subarray(0, 12));
  decipher.setAuthTag(blob.subarray(12, 28));
  const text = Buffer.concat([decipher.update(blob.subarray(28)), decipher.final()]).toString('utf8');
  return { ...task, ...(JSON.parse(text) as SecretFields) };
}
