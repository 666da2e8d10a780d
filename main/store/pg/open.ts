import { readFileSync } from 'node:fs';
import { AppError } from '../../core/errors.js';
import type { Config } from '../../core/config.js';
import { registerSecretValues } from '../../core/secret-values.js';
import { PgBridge } from './bridge.js';
import { PgDb } from './pg-db.js';
import { PG_MIGRATIONS } from './schema.js';

export interface StoreTarget {
  url: string;
  schema: string;
  /** The URL without its password, for messages and `doctor`. */
  label: string;
  /** Where the URL came from: 'LIGHTWORKER_DATABASE_URL', 'store.url_file' or 'store.url'. */
  source: string;
  /** `[store] listen`: wake on LISTEN/NOTIFY (else poll the change counter, as behind a transaction-mode pooler). */
  listen?: boolean;
}

/**
 * Which PostgreSQL store this home uses, or null for the home's SQLite file. Precedence:
 * LIGHTWORKER_DATABASE_URL, then `[store] url_file` (a file the user names, holding the whole URL), then
 * `[store] url` (no password allowed there; PGPASSWORD supplies it). A password is registered with the
 * redactor at once, so no log, event or error carries it.
 */
export function storeTarget(config: Config, env: NodeJS.ProcessEnv = process.env): StoreTarget | null {
  let url: string | undefined;
  let source = '';
  if (env.LIGHTWORKER_DATABASE_URL) {
    url = env.LIGHTWORKER_DATABASE_URL.trim();
    source = 'LIGHTWORKER_DATABASE_URL';
  } else if (config.store.url_file) {
    try {
      url = readFileSync(config.store.url_file, 'utf8').trim();
    } catch (err) {
      throw new AppError('invalid_input', `store.url_file: cannot read ${config.store.url_file}: ${(err as Error).message}`, { key: 'store.url_file' });
    }
    source = 'store.url_file';
  } else if (config.store.url) {
    url = config.store.url;
    source = 'store.url';
  }
  if (!url) return null;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new AppError('invalid_input', `${source}: not a URL (expected postgres://user@host:5432/database)`, { key: source });
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new AppError('invalid_input', `${source}: expected a postgres:// URL, got ${parsed.protocol}//`, { key: source });
  }
  // A password may ride in the userinfo or as ?password=… (node-postgres reads both): neither is shown.
  const secrets = [decodeURIComponent(parsed.password), parsed.searchParams.get('password') ?? '', env.PGPASSWORD ?? ''].filter((s) => s.length >= 4);
  if (secrets.length) registerSecretValues(secrets);
  parsed.password = '';
  parsed.searchParams.delete('password');
  return { url, schema: config.store.schema, label: `${parsed.toString()} (schema ${config.store.schema})`, source, listen: config.store.listen };
}

const CONNECT_TIMEOUT_MS = 10_000;
const CALL_TIMEOUT_MS = 120_000;
/** How long a new LISTEN waits for its own probe notification before the store is polled instead. */
const LISTEN_PROBE_MS = 3000;

/**
 * A transaction idle this long is ended by the server. The engine's transactions are synchronous (statement
 * after statement, no waiting inside), so only a runner that froze (SIGSTOP, a closed lid) or lost its
 * network mid-transaction gets there; without this its row locks — its runner row, a task's row, the claim
 * lock — held every other runner's reaping and claims until the server's TCP keepalive (hours).
 */
const IDLE_TX_TIMEOUT_MS = 5000;

/**
 * How long one store call may block before the store counts as gone for this process (its runner then
 * stops and says so): LIGHTWORKER_PG_CALL_TIMEOUT_MS, else 120 s. Bad values are refused, naming the variable.
 */
export function callTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.LIGHTWORKER_PG_CALL_TIMEOUT_MS;
  if (raw === undefined || raw === '') return CALL_TIMEOUT_MS;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1000) {
    throw new AppError('invalid_input', `LIGHTWORKER_PG_CALL_TIMEOUT_MS: expected whole milliseconds of at least 1000, got ${JSON.stringify(raw)}`, { key: 'LIGHTWORKER_PG_CALL_TIMEOUT_MS' });
  }
  return n;
}

/**
 * Open the PostgreSQL store and bring its schema up to date (one migrator at a time, by advisory lock).
 * `homeRoot`: the home this process runs from, whose `secret.key` seals redacted texts (tasks/secrets.ts);
 * a SQLite store finds it beside its file.
 */
export function openPgDb(target: StoreTarget, homeRoot?: string): PgDb {
  const channel = `lightworker_${target.schema}`;
  const timeoutMs = callTimeoutMs();
  const bridge = new PgBridge({
    // The schema in the application name: a DBA (or a test) tells one fleet's connections from another's.
    cfg: { connectionString: target.url, application_name: `lightworker/${target.schema}`, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, idle_in_transaction_session_timeout: IDLE_TX_TIMEOUT_MS },
    schemaIdent: `"${target.schema}"`,
    channelIdent: `"${channel}"`,
    channel,
    probeMs: LISTEN_PROBE_MS,
    timeoutMs,
    label: target.label,
  });
  try {
    bridge.connect();
  } catch (err) {
    bridge.close();
    throw err;
  }
  const db = new PgDb(bridge, target.label, homeRoot, { listen: target.listen ?? true });
  try {
    migratePg(db, target.schema, channel);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/**
 * One migration step per transaction, each under a transaction-scoped advisory lock (so one migrator at a
 * time, and nothing is left locked on a pooled server connection: a session lock taken through a
 * transaction-mode pooler could be released on another one).
 */
function migratePg(db: PgDb, schema: string, channel: string): void {
  for (;;) {
    const done = db.transaction(() => {
      db.exec(`SELECT pg_advisory_xact_lock(hashtext('lightworker.migrate.${schema}'))`);
      db.exec(`CREATE SCHEMA IF NOT EXISTS "${schema}"; CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)`);
      let row = db.prepare('SELECT version FROM schema_version').get() as { version: number } | undefined;
      if (!row) {
        db.prepare('INSERT INTO schema_version (version) VALUES (0)').run();
        row = { version: 0 };
      }
      if (row.version > PG_MIGRATIONS.length) {
        throw new AppError('schema_too_new', `the PostgreSQL store's schema version ${row.version} is newer than this LightWorker understands (${PG_MIGRATIONS.length}); upgrade LightWorker on this host`, {
          databaseVersion: row.version,
          supportedVersion: PG_MIGRATIONS.length,
        });
      }
      if (row.version === PG_MIGRATIONS.length) return true;
      db.exec(PG_MIGRATIONS[row.version].sql.replaceAll('{channel}', channel));
      db.prepare('UPDATE schema_version SET version = ?').run(row.version + 1);
      return false;
    })();
    if (done) return;
  }
}
