import { chmodSync, existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { AppError } from '../core/errors.js';
import { connectSqlite, isPostgres, type Db } from './db.js';
import { verifyAudit } from './events.js';

export interface BackupResult {
  file: string;
  bytes: number;
  tasks: number;
  events: number;
  /** The copy's own checks: SQLite's quick_check and the event log's hash chain. */
  integrity: 'ok';
  audit: { ok: boolean; checked: number };
  durationMs: number;
}

/**
 * A consistent copy of the SQLite store taken while runners work, through SQLite's online backup API
 * (pages copied in steps; a write meanwhile restarts the copy of what it touched, so the result is one
 * point in time). Written beside `file` first and renamed into place once the copy passed its own
 * quick_check and audit chain, so a failed or interrupted backup never leaves a file that looks whole.
 * The copy is private to its user (0600) like the store. PostgreSQL stores are backed up with pg_dump.
 */
export async function backupStore(db: Db, file: string, opts: { force?: boolean } = {}): Promise<BackupResult> {
  if (isPostgres(db)) {
    throw new AppError(
      'invalid_input',
      'backup: this home uses a PostgreSQL store; back it up with pg_dump, e.g. `pg_dump --format=custom --schema=<the store schema> "$LIGHTWORKER_DATABASE_URL" > lightworker.dump` (it is consistent while runners work), and restore with pg_restore',
      { field: 'file' },
    );
  }
  if (existsSync(file) && !opts.force) throw new AppError('invalid_input', `file: ${file} exists; pick another name or pass --force to replace it`, { field: 'file' });
  if (!existsSync(dirname(file)) || !statSync(dirname(file)).isDirectory()) throw new AppError('invalid_input', `file: the folder ${dirname(file)} does not exist`, { field: 'file' });
  const started = performance.now();
  const partial = join(dirname(file), `.${Date.now()}-${process.pid}.lightworker-backup.partial`);
  try {
    await (db as unknown as BetterSqlite3.Database).backup(partial);
    chmodSync(partial, 0o600);
    // The copy keeps the store's WAL mode in its header; a backup is one self-contained file instead.
    const copy = connectSqlite(partial, { fileMustExist: true });
    copy.pragma('journal_mode = DELETE');
    let counts: { tasks: number; events: number };
    let audit: { ok: boolean; checked: number };
    try {
      const check = copy.pragma('quick_check(5)') as { quick_check: string }[];
      if (check.length !== 1 || check[0].quick_check !== 'ok') throw new AppError('store_damaged', `backup: the copy failed its integrity check: ${check.map((r) => r.quick_check).join('; ')}`);
      counts = {
        tasks: (copy.prepare('SELECT COUNT(*) AS n FROM tasks').get() as { n: number }).n,
        events: (copy.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n,
      };
      const verified = verifyAudit(copy as unknown as Db);
      audit = { ok: verified.ok, checked: verified.checked };
      if (!verified.ok) throw new AppError('store_damaged', `backup: the copy's event log does not verify (at event ${verified.broken?.seq}: ${verified.broken?.reason}); the store itself may be damaged: run \`lightworker audit verify\``);
    } finally {
      copy.close();
    }
    renameSync(partial, file);
    return { file, bytes: statSync(file).size, ...counts, integrity: 'ok', audit, durationMs: Math.round(performance.now() - started) };
  } finally {
    for (const f of [partial, `${partial}-wal`, `${partial}-shm`, `${partial}-journal`]) rmSync(f, { force: true });
  }
}
