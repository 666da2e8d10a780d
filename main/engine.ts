import { EventEmitter } from 'node:events';
import { watch as fsWatch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { loadConfig, type Config } from './core/config.js';
import { registerSecretValues, secretValuesOfEnv } from './core/secret-values.js';
import { openHomePrivately, resolveHome, type HomePaths } from './core/home.js';
import { openDb, writeTx, type Db } from './store/db.js';
import { dataVersion, onStoreCommit, storeCapabilities } from './store/capabilities.js';
import { openPgDb, storeTarget } from './store/pg/open.js';
import { EventCursor } from './store/event-cursor.js';
import { useKeyFile } from './tasks/secrets.js';
import { appendEvent, latestSeq, type EventRow } from './store/events.js';
import { watchConfigFile, type ConfigWatch } from './core/config-watch.js';
import { AppError } from './core/errors.js';
import { checkStoreBeforeOpen, recordStoreIdentity } from './store/identity.js';
import { lookAtStoreFileConfirmed, storeFileId, type StoreFileId } from './store/integrity.js';
import { storeDamagedError, storeFaultOf, storeFullError } from './store/store-faults.js';
import type { LeaderEngine } from './store/engine-handle.js';

const GAP_RECHECK_MS = 50;
const RETRY_MS = 250;

export interface EngineOptions {
  /** Explicit home directory (`--home`); otherwise LIGHTWORKER_HOME or the platform default. */
  home?: string;
  nativeBinding?: string;
  /**
   * How long one SQLite statement waits for another process's write lock, blocking this thread (default
   * BUSY_TIMEOUT_MS). A face whose commands retry a busy store between tries (runCommand) sets it short.
   */
  busyTimeoutMs?: number;
  /** Override the config file (tests). */
  config?: Config;
  /** How often to look for other processes' commits, in ms. */
  pollMs?: number;
  /** How often `watch()` looks at config.toml for changes, in ms. */
  configPollMs?: number;
}

/**
 * One open home: database, config and an in-process event stream. Every face (CLI, MCP, HTTP, desktop)
 * holds one Engine; the scheduler, when this process leads, runs on top of it.
 *
 * `events` emits 'event' (EventRow) for every appended event — ours at once, other processes' within
 * `pollMs` (via PRAGMA data_version) — and 'change' after every batch. A watching engine also reloads
 * config.toml when it changes ('config' with the new Config); an invalid file is refused (the old
 * config stays) and recorded as a `config.invalid` event.
 */
export class Engine implements LeaderEngine {
  readonly home: HomePaths;
  readonly db: Db;
  private currentConfig!: Config;
  readonly events: EventEmitter = new EventEmitter();
  private readonly cursor: EventCursor;
  private pollTimer: NodeJS.Timeout | null = null;
  private dataVersion = 0;
  private flushQueued = false;
  private closed = false;
  private readonly pollMs: number;
  private readonly configPollMs: number;
  private readonly pinnedConfig: boolean;
  private configWatch: ConfigWatch | null = null;

  /** The better-sqlite3 addon this engine opened its store with (the desktop app's own build), for other connections. */
  readonly nativeBinding: string | undefined;

  constructor(opts: EngineOptions = {}) {
    this.nativeBinding = opts.nativeBinding;
    this.home = resolveHome(opts.home);
    openHomePrivately(this.home);
    this.config = opts.config ?? loadConfig(this.home.config);
    const target = storeTarget(this.currentConfig);
    if (this.currentConfig.store.key_file) useKeyFile(this.home.root, this.currentConfig.store.key_file);
    this.db = target ? openPgDb(target, this.home.root) : this.openSqlite(opts.nativeBinding, opts.busyTimeoutMs);
    this.cursor = new EventCursor(latestSeq(this.db));
    this.pollMs = opts.pollMs ?? 25;
    this.configPollMs = opts.configPollMs ?? 500;
    this.pinnedConfig = opts.config !== undefined;
    this.events.setMaxListeners(1000);
  }

  get config(): Config {
    return this.currentConfig;
  }

  /** The SQLite file this engine opened (device, inode), for a leader's look at it; null on PostgreSQL. */
  storeFile: StoreFileId | null = null;

  /**
   * The home's SQLite store, never created where one existed (store/identity.ts), and refused when it is
   * not a database any more (overwritten, truncated) with an error saying what to do.
   */
  private openSqlite(nativeBinding: string | undefined, busyTimeoutMs: number | undefined): Db {
    checkStoreBeforeOpen(this.home);
    let db: Db;
    try {
      db = openDb({ path: this.home.db, nativeBinding, busyTimeoutMs });
    } catch (err) {
      if (err instanceof AppError) throw err;
      const fault = storeFaultOf(err, this.home.root);
      if (fault === 'full') throw storeFullError(this.home.db, this.home.root, err);
      if (fault === 'damaged') throw storeDamagedError(this.home.db, `cannot be opened: ${(err as Error).message}`);
      throw err;
    }
    try {
      this.storeFile = storeFileId(this.home.db);
      const problem = this.storeFile ? lookAtStoreFileConfirmed(this.home.db, this.storeFile, nativeBinding, this.home.root) : null;
      if (problem) throw storeDamagedError(this.home.db, problem.replace(' while this process had it open', ''));
      recordStoreIdentity(db, this.home, (db as { readonly?: boolean }).readonly === true);
      return db;
    } catch (err) {
      db.close();
      if (err instanceof AppError) throw err;
      const fault = storeFaultOf(err, this.home.root);
      if (fault === 'full') throw storeFullError(this.home.db, this.home.root, err);
      if (fault === 'damaged') throw storeDamagedError(this.home.db, `cannot be read: ${(err as Error).message}`);
      throw err;
    }
  }

  /**
   * Replace the configuration. Every secret it lets LightWorker know by value (gateway keys from their
   * `key_env`, secret-named variables of this process's environment) is registered with the redactor.
   */
  set config(config: Config) {
    registerSecretValues(secretValuesOfEnv(process.env, Object.values(config.gateways).map((g) => g.key_env)));
    this.currentConfig = config;
  }

  /** Run `fn` as one IMMEDIATE transaction, then publish what it appended. */
  write<T>(fn: () => T): T {
    const beat = this.beat;
    let afterCommit: (() => void) | void = undefined;
    const out = writeTx(this.db, beat ? () => {
      const r = fn();
      afterCommit = beat();
      return r;
    } : fn);
    // Only once it committed (a retried transaction beats again; the last one's counts).
    (afterCommit as (() => void) | void)?.();
    this.notify();
    return out;
  }

  private beat: (() => (() => void) | void) | null = null;

  /**
   * Run `beat` at the end of every `write` transaction of this engine (null: stop). A leader renews its lease
   * there: holding the write lock anyway, the renewal costs one UPDATE, and a leader that waits its turn for
   * the lock claim after claim still beats each time it gets it, not only when its event loop is free.
   * What `beat` returns runs after the transaction committed.
   */
  setWriteBeat(beat: (() => (() => void) | void) | null): void {
    this.beat = beat;
  }

  /** Publish new events soon (coalesced). Call after any write made outside `write`. */
  notify(): void {
    if (this.flushQueued || this.closed) return;
    this.flushQueued = true;
    setImmediate(() => {
      this.flushQueued = false;
      this.flush();
    });
  }

  /**
   * Start noticing other processes' commits (PRAGMA data_version polling). Idempotent. Besides the poll,
   * a file watch on the home folder looks at once when the database's WAL changes (a commit anywhere):
   * another process's commit is seen in about a millisecond instead of half a poll period on average
   * (measured from a worker's exit to wait_tasks returning in another process). The poll stays as the fallback
   * (no inotify, a network file system, watch limits reached).
   */
  watch(): void {
    if (this.pollTimer || this.closed) return;
    this.dataVersion = dataVersion(this.db);
    this.pollTimer = setInterval(() => this.checkDataVersion(), this.pollMs);
    this.pollTimer.unref();
    this.watchDatabaseFiles();
    if (!this.pinnedConfig) this.configWatch = watchConfigFile(this.home.config, { onChange: (c) => this.reloadConfig(c), onInvalid: (e) => this.refuseConfig(e) }, this.configPollMs);
  }

  private checkDataVersion(): void {
    if (this.closed) return;
    try {
      const v = dataVersion(this.db);
      if (v !== this.dataVersion) {
        this.dataVersion = v;
        this.flush();
        this.publish('external');
      }
    } catch {
      // Called from a timer, where a throw crashes the process: the store failed this look (a PostgreSQL
      // outage; the scheduler's beat reports it), and the next poll looks again.
    }
  }

  private dbWatcher: FSWatcher | null = null;
  private checkQueued = false;

  private stopCommitWatch: (() => void) | null = null;

  private watchDatabaseFiles(): void {
    if (storeCapabilities(this.db).notifiesCommits) {
      // PostgreSQL: other hosts' commits arrive as NOTIFY, at once; no file to watch.
      try {
        this.stopCommitWatch = onStoreCommit(this.db, () => this.queueCheck());
      } catch {
        // no LISTEN connection: the poll alone
      }
      return;
    }
    const name = basename(this.home.db);
    try {
      this.dbWatcher = fsWatch(dirname(this.home.db), { persistent: false }, (_event, file) => {
        if (file !== null && !String(file).startsWith(name)) return;
        this.queueCheck();
      });
      this.dbWatcher.on('error', () => this.unwatchDatabaseFiles());
    } catch {
      this.dbWatcher = null; // the poll alone
    }
  }

  private queueCheck(): void {
    if (this.checkQueued) return;
    this.checkQueued = true;
    setImmediate(() => {
      this.checkQueued = false;
      this.checkDataVersion();
    });
  }

  private unwatchDatabaseFiles(): void {
    this.dbWatcher?.close();
    this.dbWatcher = null;
    this.stopCommitWatch?.();
    this.stopCommitWatch = null;
  }

  /**
   * Apply a config.toml another process changed since the last poll, now (one stat when none did): a task
   * about to run must not run under settings replaced a moment before it was submitted (`submittedAt`:
   * no stat when the watch looked after that).
   */
  refreshConfig(submittedAt?: number): void {
    if (this.closed) return;
    this.configWatch?.check(submittedAt);
  }

  private reloadConfig(config: Config): void {
    if (this.closed) return;
    this.config = config;
    this.events.emit('config', config);
  }

  private refuseConfig(error: Error): void {
    if (this.closed) return;
    try {
      this.write(() => appendEvent(this.db, null, 'config.invalid', { path: this.home.config, error: error.message, pid: process.pid, kept: 'the configuration loaded before' }));
    } catch {
      // A busy or closing database must not crash a leader over a note; the old config stays either way.
    }
  }

  private flush(): void {
    if (this.closed) return;
    let events: EventRow[];
    try {
      events = this.cursor.read(this.db);
    } catch {
      // The store failed this once (a dropped PostgreSQL connection, a busy file): a timer callback must
      // not crash the process; the cursor did not move, so the next look publishes the same events.
      this.recheckSoon(RETRY_MS);
      return;
    }
    for (const e of events) this.publish('event', e);
    // A sequence number below the newest one read is not committed yet (PostgreSQL hands them out
    // before commit): look again shortly, so its event is published when its transaction commits.
    if (this.cursor.waiting) this.recheckSoon(GAP_RECHECK_MS);
    this.publish('change');
  }

  /**
   * Emit to each listener on its own. These run from timers: a listener that throws (one reading the store
   * while PostgreSQL is unreachable) must neither crash the process nor keep the other listeners from the
   * event. Its error is printed as a process warning, once per message.
   */
  private publish(name: 'event' | 'change' | 'external', ...args: unknown[]): void {
    // rawListeners: a `once` listener's wrapper, which removes itself when called.
    for (const listener of this.events.rawListeners(name)) {
      try {
        (listener as (...a: unknown[]) => void)(...args);
      } catch (err) {
        const message = `a '${name}' listener failed: ${err instanceof Error ? err.message : String(err)}`;
        if (!this.warned.has(message) && this.warned.size < 100) {
          this.warned.add(message);
          process.emitWarning(message);
        }
      }
    }
  }

  private readonly warned = new Set<string>();

  private recheckSoon(ms: number): void {
    if (this.gapTimer || this.closed) return;
    this.gapTimer = setTimeout(() => {
      this.gapTimer = null;
      this.flush();
    }, ms);
    this.gapTimer.unref();
  }

  private gapTimer: NodeJS.Timeout | null = null;

  /** Why the store was closed while this process lives on (a standby MCP server whose store was harmed), or null. */
  storeFault: Error | null = null;

  closeStoreFor(fault: Error): void {
    this.storeFault = fault;
    this.db.close();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.gapTimer) clearTimeout(this.gapTimer);
    this.unwatchDatabaseFiles();
    this.configWatch?.stop();
    this.events.removeAllListeners();
    this.db.close();
  }
}
