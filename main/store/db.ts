import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { AppError } from '../core/errors.js';
import { touchPrivate } from '../core/private-home.js';
import { MIGRATIONS } from './migrations/index.js';

/**
 * Loaded with require, not `import`: importing a CommonJS package from ESM makes Node scan its source for
 * named exports (cjs-module-lexer), which costs a CLI cold start more than the addon itself (CLI start-up time).
 */
const requireHere = createRequire(import.meta.url);
const Database = requireHere('better-sqlite3') as typeof BetterSqlite3;

type SqliteDb = BetterSqlite3.Database;

let builtAddon: string | null | undefined;

/**
 * A better-sqlite3 connection, with the one load failure a user meets after upgrading Node in an existing
 * checkout (the addon was compiled for the old Node's ABI) said in one line with its fix, instead of the
 * addon loader's paragraph.
 */
export function connectSqlite(target: string | Buffer, options: BetterSqlite3.Options): SqliteDb {
  try {
    return new Database(target, options);
  } catch (err) {
    throw abiError(err) ?? err;
  }
}

function abiError(err: unknown): AppError | null {
  const message = err instanceof Error ? err.message : '';
  const m = /NODE_MODULE_VERSION (\d+)[^]*?requires\s+NODE_MODULE_VERSION (\d+)/.exec(message);
  if (!m) return null;
  const fix = 'npm rebuild better-sqlite3';
  return new AppError(
    'unavailable',
    `better-sqlite3 was built for another Node.js (ABI ${m[1]}; this Node ${process.version} needs ${m[2]}): after a Node upgrade run \`${fix}\` in the LightWorker checkout`,
    { fix, nodeVersion: process.version, builtFor: Number(m[1]), needs: Number(m[2]) },
  );
}

/** Where `bindings` looks first, in its order: the addon a build of better-sqlite3 leaves. */
const ADDON_CANDIDATES = [['build'], ['build', 'Debug'], ['build', 'Release']];

/**
 * The addon better-sqlite3 built, named outright: left to itself better-sqlite3 finds it through the
 * `bindings` package, which walks a stack trace and probes path after path, at every start (CLI start-up time).
 * Not under Electron (the app passes its own build; asar paths are Electron's business), and not when none
 * of those files exists (a prebuilt elsewhere): then better-sqlite3 searches as before.
 */
function defaultBinding(): string | undefined {
  if (builtAddon === undefined) {
    builtAddon = null;
    if (!process.versions.electron) {
      try {
        const pkg = dirname(requireHere.resolve('better-sqlite3/package.json'));
        builtAddon = ADDON_CANDIDATES.map((d) => join(pkg, ...d, 'better_sqlite3.node')).find((f) => existsSync(f)) ?? null;
      } catch {
        // no package.json to locate it by: better-sqlite3 searches as before
      }
    }
  }
  return builtAddon ?? undefined;
}

function bindingOption(opts: OpenDbOptions): { nativeBinding?: string } {
  const nativeBinding = opts.nativeBinding ?? defaultBinding();
  return nativeBinding ? { nativeBinding } : {};
}

/** One prepared statement: the part of better-sqlite3's Statement the engine uses. */
export interface Statement {
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): { changes: number };
  iterate(...params: unknown[]): IterableIterator<unknown>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- better-sqlite3's own signature
type AnyFn = (...params: any[]) => unknown;
type ArgsOf<F extends AnyFn> = F extends (...args: infer A) => unknown ? A : never;

/** A function run as one transaction, better-sqlite3 style: call it, or `.immediate()` it. */
export interface Transaction<F extends AnyFn> {
  (...params: ArgsOf<F>): ReturnType<F>;
  default(...params: ArgsOf<F>): ReturnType<F>;
  deferred(...params: ArgsOf<F>): ReturnType<F>;
  immediate(...params: ArgsOf<F>): ReturnType<F>;
  exclusive(...params: ArgsOf<F>): ReturnType<F>;
}

/**
 * The store connection the engine talks to: the synchronous subset of better-sqlite3 every query module
 * uses. Two implementations: better-sqlite3 itself (the default, a file in the home) and PgDb
 * (store/pg/pg-db.ts: PostgreSQL, the same SQL translated, a fleet of runners). Query modules stay
 * dialect-blind except where a dialect must differ (`isPostgres`).
 */
export interface Db {
  readonly name: string;
  readonly open: boolean;
  readonly inTransaction: boolean;
  prepare(sql: string): Statement;
  transaction<F extends AnyFn>(fn: F): Transaction<F>;
  exec(sql: string): unknown;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  close(): unknown;
  /** 'postgres' on a PgDb; absent on better-sqlite3. */
  readonly dialect?: 'postgres';
  /** The home this connection serves (its secret.key): set on a PgDb; a SQLite file's is its folder. */
  readonly homeRoot?: string;
}

/** Is this connection the PostgreSQL store (a fleet), rather than the home's SQLite file? */
export function isPostgres(db: Db): boolean {
  return db.dialect === 'postgres';
}

export interface OpenDbOptions {
  /** Path to the database file, or ':memory:'. */
  path: string;
  /** better-sqlite3 native addon path; the Electron app passes its own build here. */
  nativeBinding?: string;
  /** Open read-only. Default: read-only exactly when the file or its folder is not writable by this user. */
  readonly?: boolean;
  /** Milliseconds a writer waits for another process's lock before SQLITE_BUSY (default BUSY_TIMEOUT_MS). */
  busyTimeoutMs?: number;
}

/** How long one statement or BEGIN IMMEDIATE waits, in SQLite's busy handler, for another process's write lock. */
export const BUSY_TIMEOUT_MS = 5000;

/** The schema version this binary writes. A database with a higher user_version is refused. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Open the database with LightWorker's pragmas and bring its schema up to date.
 * Each migration runs in its own IMMEDIATE transaction together with its `user_version` bump, so a crash
 * mid-migration leaves the previous version intact.
 */
export function openDb(opts: OpenDbOptions): Db {
  const readonly = opts.readonly ?? !canWriteDb(opts.path);
  // Made 0600 before SQLite creates it 0644: its -wal and -shm files take the database file's mode.
  if (!readonly && opts.path !== ':memory:' && opts.path !== '') touchPrivate(opts.path);
  const db: SqliteDb = readonly ? openReadonly(opts) : connectSqlite(opts.path, bindingOption(opts));
  dbPaths.set(db, opts.path);
  try {
    // Opening waits its turn as long as any command would: on a fresh or upgraded home the first process
    // migrates while others open beside it (two MCP sessions a host starts at once), and a process that
    // asked for a short wait per call (an MCP server) must not die at its start over that.
    const wanted = opts.busyTimeoutMs ?? BUSY_TIMEOUT_MS;
    db.pragma(`busy_timeout = ${Math.max(wanted, BUSY_TIMEOUT_MS)}`);
    if (!readonly) db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    if (readonly) requireCurrentSchema(db, opts.path);
    else migrate(db);
    if (wanted < BUSY_TIMEOUT_MS) db.pragma(`busy_timeout = ${wanted}`);
    busyTimeouts.set(db, wanted);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

const dbPaths = new WeakMap<Db, string>();
const busyTimeouts = new WeakMap<Db, number>();

/**
 * A read-only connection. A WAL database needs its `-shm` file: when nobody has the database open the
 * file is gone and this user may not create it, so the connection reads a snapshot of the file instead
 * (header switched from WAL to rollback journal; the snapshot is as current as the last checkpoint,
 * which is the whole database once its last writer closed).
 */

function openReadonly(opts: OpenDbOptions): SqliteDb {
  const binding = bindingOption(opts);
  const db = connectSqlite(opts.path, { readonly: true, fileMustExist: true, ...binding });
  try {
    db.pragma('user_version');
    return db;
  } catch (err) {
    db.close();
    const code = (err as { code?: unknown }).code;
    if (typeof code !== 'string' || !/^SQLITE_(READONLY|CANTOPEN)/.test(code)) throw err;
  }
  const image = readFileSync(opts.path);
  if (image.length >= 20) image[18] = image[19] = 1;
  return connectSqlite(image, { readonly: true, ...binding });
}

/**
 * Can this user write the database: the file (when it exists) and its folder, which holds the WAL and
 * shared-memory files? A home another user owns is still readable: reads work, writes say why not.
 */
function canWriteDb(path: string): boolean {
  if (path === ':memory:' || path === '') return true;
  try {
    if (existsSync(path)) accessSync(path, constants.W_OK);
    accessSync(dirname(path), constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** A read-only database cannot be migrated: it must already be at this binary's schema version. */
function requireCurrentSchema(db: SqliteDb, path: string): void {
  const current = schemaVersion(db);
  if (current > SCHEMA_VERSION) migrate(db); // throws schema_too_new with the usual message
  if (current < SCHEMA_VERSION) {
    throw new AppError('forbidden', `database ${path} is read-only for this user and needs an upgrade (schema ${current} < ${SCHEMA_VERSION}); open it once as its owner`, { path });
  }
}

export function schemaVersion(db: Db): number {
  return db.pragma('user_version', { simple: true }) as number;
}

export function migrate(db: SqliteDb): void {
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

/**
 * Run `fn` in an IMMEDIATE transaction: the write lock is taken up front, so the transaction never upgrades
 * from a read (a deferred transaction that reads and then writes gets SQLITE_BUSY_SNAPSHOT at once, without
 * waiting, whenever another process committed in between). Waiting for the lock is SQLite's busy handler, up
 * to the connection's busy timeout; past it, a `busy` AppError (retryable, nothing written).
 * On a database this user may not write, a `forbidden` AppError names the file.
 */
export function writeTx<T>(db: Db, fn: () => T): T {
  try {
    return db.transaction(fn).immediate();
  } catch (err) {
    throw busyError(db, readonlyError(db, err));
  }
}

/** Is this SQLite's "database is locked" (SQLITE_BUSY and its extended codes) or "table is locked"? */
export function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code);
}

/**
 * SQLite's "database is locked" as a `busy` AppError: other processes held the write lock for longer than
 * this connection waits. Whatever failed wrote nothing (its transaction rolled back) and may be retried;
 * anything else is returned unchanged.
 */
export function busyError(db: Db, err: unknown): unknown {
  if (!isBusy(err)) return err;
  const path = dbPaths.get(db) ?? db.name;
  const waited = busyTimeouts.get(db) ?? BUSY_TIMEOUT_MS;
  return new AppError('busy', `the store ${path} is busy: other processes held its write lock for more than ${waited} ms; nothing was written, retry`, {
    retryable: true,
    sqliteCode: (err as { code: string }).code,
  });
}

/**
 * Rows this connection has changed since it opened (SQLite's total_changes(), triggers included): equal
 * before and after a failed command means the command wrote nothing and may run again. Null on PostgreSQL.
 */
export function changesSoFar(db: Db): number | null {
  if (isPostgres(db)) return null;
  return (prep(db, 'SELECT total_changes() AS n').get() as { n: number }).n;
}

/** SQLite's "attempt to write a readonly database" as an AppError naming the file; anything else unchanged. */
export function readonlyError(db: Db, err: unknown): unknown {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_READONLY')) return err;
  const path = dbPaths.get(db) ?? db.name;
  return new AppError('forbidden', `cannot write ${path}: the LightWorker home is read-only for this user (reads still work)`, { path });
}

const stmtCache = new WeakMap<Db, Map<string, Statement>>();

/** A prepared statement, compiled once per connection and reused (hot paths prepare the same SQL often). */
export function prep(db: Db, sql: string): Statement {
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
