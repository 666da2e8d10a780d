import Database from 'better-sqlite3';
import { AppError } from '../core/errors.js';
import { MIGRATIONS } from './migrations/index.js';

export type Db = Database.Database;

export interface OpenDbOptions {
  /** Path to the database file, or ':memory:'. */
  path: string;
  /** better-sqlite3 native addon path; the Electron app passes its own build here. */
  nativeBinding?: string;
  readonly?: boolean;
  /** Milliseconds a writer waits for another process's lock before SQLITE_BUSY. */
  busyTimeoutMs?: number;
}

/** The schema version this binary writes. A database with a higher user_version is refused. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Open the database with LightWorker's pragmas and bring its schema up to date.
 * Each migration runs in its own IMMEDIATE transaction together with its `user_version` bump, so a crash
 * mid-migration leaves the previous version intact.
 */
export function openDb(opts: OpenDbOptions): Db {
  const db = new Database(opts.path, {
    readonly: opts.readonly ?? false,
    ...(opts.nativeBinding ? { nativeBinding: opts.nativeBinding } : {}),
  });
  try {
    db.pragma(`busy_timeout = ${opts.busyTimeoutMs ?? 5000}`);
    if (!opts.readonly) db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    migrate(db);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

export function schemaVersion(db: Db): number {
  return db.pragma('user_version', { simple: true }) as number;
}

export function migrate(db: Db): void {
  const current = schemaVersion(db);
  if (current > SCHEMA_VERSION) {
    throw new AppError(
      'schema_too_new',
      `database schema version ${current} is newer than this LightWorker understands (${SCHEMA_VERSION}); upgrade LightWorker or use another home`,
      { databaseVersion: current, supportedVersion: SCHEMA_VERSION },
    );
  }
  for (let v = current; v < SCHEMA_VERSION; v++) {
    const step = MIGRATIONS[v];
    db.transaction(() => {
      // Re-check inside the write lock: another process may have migrated meanwhile.
      if (schemaVersion(db) !== v) return;
      step.up(db);
      db.pragma(`user_version = ${v + 1}`);
    }).immediate();
  }
}

/** Run `fn` in an IMMEDIATE transaction (takes the write lock up front, so no busy upgrade deadlocks). */
export function writeTx<T>(db: Db, fn: () => T): T {
  return db.transaction(fn).immediate();
}

const stmtCache = new WeakMap<Db, Map<string, Database.Statement>>();

/** A prepared statement, compiled once per connection and reused (hot paths prepare the same SQL often). */
export function prep(db: Db, sql: string): Database.Statement {
  let m = stmtCache.get(db);
  if (!m) {
    m = new Map();
    stmtCache.set(db, m);
  }
  let s = m.get(sql);
  if (!s) {
    s = db.prepare(sql);
    m.set(sql, s);
  }
  return s;
}
