import { isPostgres, SCHEMA_VERSION, type Db } from './db.js';
import type { PgDb } from './pg/pg-db.js';
import { PG_MIGRATIONS } from './pg/schema.js';

/**
 * What the engine may ask about the store it talks to: what it can do, never which driver it is. The two
 * backends are one home's SQLite file and a PostgreSQL store a fleet of hosts shares.
 */
export interface StoreCapabilities {
  /** For people (status, `fleet status`): which kind of store this is. */
  readonly kind: 'sqlite' | 'postgres';
  /**
   * Several hosts share this store (a fleet): it holds other hosts' worktrees and runners, runners name
   * themselves, tasks carry where they come from, and its connections leave the host (TLS).
   */
  readonly sharedByHosts: boolean;
  /** Other processes' commits arrive as notifications (`onStoreCommit`); otherwise the engine watches the file. */
  readonly notifiesCommits: boolean;
  /** The data lives in one file on this host, whose disk and identity the engine watches. */
  readonly localFile: boolean;
  /** The schema version this binary writes for this kind of store. */
  readonly expectedSchemaVersion: number;
}

const SQLITE: StoreCapabilities = { kind: 'sqlite', sharedByHosts: false, notifiesCommits: false, localFile: true, expectedSchemaVersion: SCHEMA_VERSION };
const POSTGRES: StoreCapabilities = { kind: 'postgres', sharedByHosts: true, notifiesCommits: true, localFile: false, expectedSchemaVersion: PG_MIGRATIONS.length };

export function storeCapabilities(db: Db): StoreCapabilities {
  return isPostgres(db) ? POSTGRES : SQLITE;
}

/**
 * Call `fn` after each commit another process makes (a store with `notifiesCommits`); returns the way to
 * stop. Throws when the notification connection cannot be opened (the caller polls instead).
 */
export function onStoreCommit(db: Db, fn: () => void): () => void {
  if (!isPostgres(db)) throw new Error('this store sends no commit notifications (watch its file instead)');
  const pg = db as PgDb;
  pg.listen();
  return pg.onCommit(fn);
}

/**
 * A number that changes whenever another connection commits (SQLite's data_version; a PostgreSQL store
 * counts the commit notifications it received). Compare two readings; the value itself means nothing.
 */
export function dataVersion(db: Db): number {
  return db.pragma('data_version', { simple: true }) as number;
}

/** The store's own integrity check: 'ok' when sound, else what it found (SQLite's quick_check). */
export function quickCheck(db: Db): string {
  return db.pragma('quick_check', { simple: true }) as string;
}

/** How long a stopping process's store call may block: a silent server must not keep a runner from exiting. */
const STOPPING_CALL_MS = 5000;

/**
 * A process that is stopping: no later store call may block it longer than `ms` (a store that blocks calls:
 * PostgreSQL, whose calls wait for the server; a SQLite file answers or fails at once). Past that the
 * store counts as gone for this process, and what it could not write is left for recovery.
 */
export function limitStoreCalls(db: Db, ms = STOPPING_CALL_MS): void {
  if (isPostgres(db)) (db as PgDb).limitCalls(ms);
}
