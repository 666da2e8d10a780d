import { AppError } from '../core/errors.js';
import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { redactText } from '../core/redact.js';
import type { Db } from '../store/db.js';
import { redactNewRow, type NewTaskRow } from '../store/tasks.js';
import type { Task } from './types.js';
import { deleteSealedText, hasTaskSecrets, sealedBlobsOf, sealedTextOf, taskSecretsOf, upsertSealedText, upsertTaskSecrets } from '../store/sealed.js';
import { frameSealed, keyIdOf, parseSealed } from './seal-format.js';
import { storeCapabilities } from '../store/capabilities.js';

/** Fields of a task that may hold caller text, and so are redacted before they are stored. */
type SecretFields = Pick<Task, 'name' | 'objective' | 'successCriteria' | 'verify' | 'metadata'>;

const keyCache = new Map<string, Buffer>();

/**
 * Seal this home's texts with the key in `path` instead of its own `secret.key`: a fleet's hosts share
 * one key (`[store] key_file`), so a runner on one host unseals what another host sealed. The file
 * holds exactly 32 bytes and is readable by its owner alone.
 */
export function useKeyFile(homeRoot: string, path: string): void {
  let key: Buffer;
  try {
    key = readFileSync(path);
  } catch (err) {
    throw new AppError('invalid_input', `store.key_file: cannot read ${path}: ${(err as Error).message}`, { key: 'store.key_file' });
  }
  if (key.length !== 32) throw new AppError('invalid_input', `store.key_file: ${path} must hold exactly 32 bytes (e.g. \`head -c 32 /dev/urandom > ${path}\`), not ${key.length}`, { key: 'store.key_file' });
  if (process.platform !== 'win32' && (statSync(path).mode & 0o077) !== 0) {
    throw new AppError('invalid_input', `store.key_file: ${path} is readable by others; \`chmod 600 ${path}\``, { key: 'store.key_file' });
  }
  keyCache.set(homeRoot, key);
}

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

/**
 * An HMAC-SHA256 signature (hex) of `text` with a key derived from the home's key: records that must
 * prove they were written by LightWorker itself (gc's tombstones), not by someone who can write the
 * database but has no access to the home's key file. A fleet's hosts share the key, so any host verifies.
 */
export function signWithHomeKey(homeRoot: string, text: string): string {
  const derived = createHmac('sha256', homeKey(homeRoot)).update('lightworker signing key 1').digest();
  return createHmac('sha256', derived).update(text).digest('hex');
}

/** Was `signature` made by signWithHomeKey over `text` with this home's key? */
export function checkHomeSignature(homeRoot: string, text: string, signature: string): boolean {
  const want = Buffer.from(signWithHomeKey(homeRoot, text), 'hex');
  const got = Buffer.from(signature, 'hex');
  return got.length === want.length && timingSafeEqual(got, want);
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

/** AES-256-GCM with the home's key, framed with its id (tasks/seal-format.ts). */
function encrypt(homeRoot: string, text: string): Buffer {
  const key = homeKey(homeRoot);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
  return frameSealed(keyIdOf(key), Buffer.concat([iv, cipher.getAuthTag(), body]));
}

function decrypt(homeRoot: string, blob: Buffer): string {
  const key = homeKey(homeRoot);
  const { keyId, sealed } = parseSealed(blob);
  const mine = keyIdOf(key);
  const opened = keyId === null || keyId === mine ? openWith(key, sealed) : null;
  // A frame that failed to open may be an old unframed blob whose iv happens to start like one.
  const text = opened ?? (keyId !== null ? openWith(key, blob) : null);
  if (text !== null) return text;
  // In a fleet: sealed on another host with its own key.
  throw new AppError('forbidden', `a sealed text of this task cannot be opened with this home's key (${homeRoot}, key ${mine}): it was sealed with ${keyId ? `key ${keyId}` : 'another key'} — in a fleet, give every host the same [store] key_file`, {
    sealedWith: keyId,
    key: mine,
  });
}

function openWith(key: Buffer, sealed: Buffer): string | null {
  if (sealed.length < 28) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12));
    decipher.setAuthTag(sealed.subarray(12, 28));
    return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}

/** This home's key id (what `doctor` and a runner's log name). */
export function homeKeyId(homeRoot: string): string {
  return keyIdOf(homeKey(homeRoot));
}

/**
 * Can this home open every sealed text of the task? Null when it can (or nothing is sealed); else the id
 * of a key it lacks ('unknown' for a text sealed before key ids were recorded that does not open here).
 */
export function foreignSealOf(db: Db, homeRoot: string, taskId: string): string | null {
  const key = homeKey(homeRoot);
  const mine = keyIdOf(key);
  for (const blob of sealedBlobsOf(db, taskId)) {
    const { keyId, sealed } = parseSealed(blob);
    if (keyId === mine) continue;
    if (keyId !== null) return keyId;
    if (openWith(key, sealed) === null) return 'unknown';
  }
  return null;
}

/** Store the originals encrypted (AES-256-GCM) with the home's key. */
export function sealSecrets(db: Db, homeRoot: string, taskId: string, original: SecretFields): void {
  upsertTaskSecrets(db, taskId, encrypt(homeRoot, JSON.stringify(original)));
}

/** The task as the runner needs it: with the caller's original text where it was redacted. */
export function unsealTask(db: Db, homeRoot: string, task: Task): Task {
  const sealed = taskSecretsOf(db, task.id);
  if (!sealed) return task;
  return { ...task, ...(JSON.parse(decrypt(homeRoot, sealed)) as SecretFields) };
}

/**
 * Redact one piece of caller text for a task (a follow-up message, an answer) and, when redaction
 * changed it, seal the original under `key` so the worker still gets it (see `unsealText`). Returns
 * the redacted text, the only form stored in the clear. `homeRoot` holds the key: the folder of the
 * database file.
 */
export function redactAndSeal(db: Db, taskId: string, key: string, text: string): string {
  const redacted = redactText(text);
  if (redacted !== text) {
    upsertSealedText(db, taskId, key, encrypt(homeRootOf(db), text));
  } else {
    deleteSealedText(db, taskId, key);
  }
  return redacted;
}

/** The original of a text sealed by `redactAndSeal`, else `fallback` (the stored, redacted form). */
export function unsealText(db: Db, taskId: string, key: string, fallback: string): string {
  const sealed = sealedTextOf(db, taskId, key);
  return sealed ? decrypt(homeRootOf(db), sealed) : fallback;
}

/**
 * Replace a task's objective: returns the redacted text to store, and keeps the sealed originals in
 * step (sealed when the new text or any other field holds a secret). Runs in the caller's transaction.
 */
export function resealObjective(db: Db, task: Task, objective: string): string {
  const redacted = redactText(objective);
  const root = homeRootOf(db);
  const originals = { ...pick(unsealTask(db, root, task)), objective };
  const hadSealed = hasTaskSecrets(db, task.id);
  if (hadSealed || redacted !== objective) sealSecrets(db, root, task.id, originals);
  return redacted;
}

/**
 * A home's root: the folder of its SQLite database (core/home.ts: `<root>/lightworker.db`); a PostgreSQL
 * connection names the home that opened it.
 */
function homeRootOf(db: Db): string {
  if (db.homeRoot) return db.homeRoot;
  if (!storeCapabilities(db).localFile) throw new Error('this PostgreSQL connection was opened without a home: it cannot seal or unseal texts');
  return dirname(db.name);
}
