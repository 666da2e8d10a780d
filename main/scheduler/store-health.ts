import type { AppError } from '../core/errors.js';
import type { HomePaths } from '../core/home.js';
import type { Db } from '../store/db.js';
import { storeCapabilities } from '../store/capabilities.js';
import { appendEvent } from '../store/events.js';
import { lookAtStoreFileConfirmed, quickCheckFile, rescueStore, type StoreFileId } from '../store/integrity.js';
import { formatBytes, freeBytes, storeDamagedError, storeFullError } from '../store/store-faults.js';

/** Space a full file system must have again before a leader starts new tasks (a task's end alone is small). */
export const MIN_FREE_BYTES = 4 * 1024 * 1024;

/** What the watch needs of the open home (the Engine is one). */
export interface WatchedStore {
  readonly db: Db;
  readonly home: HomePaths;
  readonly storeFile: StoreFileId | null;
  readonly nativeBinding: string | undefined;
  readonly config: { store: { check_interval_s: number } };
  write<T>(fn: () => T): T;
}

/**
 * A leader's watch over its SQLite store (scheduler/service.ts calls it at every beat):
 * - damage: the file deleted, replaced, truncated, or failing `PRAGMA quick_check` (on starting to lead and
 *   every `store.check_interval_s`, at most 1 % of the time) is an AppError `store_damaged` thrown at the
 *   beat, which the service turns into a stop that kills what runs (as for a store closed for good);
 * - a full file system: `noteFull` on a write that found no space; the leader claims nothing new until
 *   `recoveredFrom` sees a beat write again, the tasks' ends recorded and space back, then records a
 *   `store.full` event saying what was full, where and for how long.
 */
export class StoreHealth {
  private nextQuickCheck = 0;
  /** Since when the store could not be written, and the error saying so; null while it can be. */
  full: { since: number; error: AppError } | null = null;

  constructor(private readonly engine: WatchedStore) {}

  private get watched(): boolean {
    return storeCapabilities(this.engine.db).localFile && this.engine.storeFile !== null;
  }

  /**
   * Throws `store_damaged` when the store is no longer the database opened. `thorough`: run quick_check
   * now; `quick = false` (a standby: the leader watches the pages) skips the periodic quick_check.
   */
  check(thorough = false, now = Date.now(), quick = true): void {
    if (!this.watched) return;
    const path = this.engine.home.db;
    const problem = lookAtStoreFileConfirmed(path, this.engine.storeFile!, this.engine.nativeBinding, this.engine.home.root);
    if (problem) throw this.damaged(problem);
    if (!quick || (!thorough && now < this.nextQuickCheck)) return;
    const r = quickCheckFile(path, this.engine.nativeBinding, this.engine.home.root);
    this.nextQuickCheck = now + Math.max(this.engine.config.store.check_interval_s * 1000, Math.round(r.durationMs * 100));
    if (!r.ok) throw this.damaged(`failed its integrity check (${r.problem})`);
  }

  /** The error for a damaged store; a deleted or replaced one is first copied from what this connection holds. */
  private damaged(what: string): AppError {
    const path = this.engine.home.db;
    let rescued: string | undefined;
    if (/deleted|replaced|emptied/.test(what)) rescued = rescueStore(this.engine.db, `${path}.rescued-${new Date().toISOString().replace(/[:.]/g, '-')}`) ?? undefined;
    return storeDamagedError(path, what, { rescued });
  }

  /** A write found the file system full. Returns the message to say when this starts a full spell, else null. */
  noteFull(err: unknown, now = Date.now()): string | null {
    if (this.full) return null;
    this.full = { since: now, error: storeFullError(this.engine.home.db, this.engine.home.root, err) };
    return `${this.full.error.message}; no new task starts until it can be written, and the ends of running tasks are retried until they are recorded`;
  }

  /**
   * After a beat that wrote: is the full spell over (`endsWaiting` tasks still retrying their ends, space
   * back)? Then its `store.full` event is written and the message to say is returned; else null.
   */
  recoveredFrom(endsWaiting: number, now = Date.now()): string | null {
    if (!this.full || endsWaiting > 0) return null;
    const free = freeBytes(this.engine.home.root);
    if (free !== null && free < MIN_FREE_BYTES) return null;
    const { since, error } = this.full;
    try {
      this.engine.write(() =>
        appendEvent(this.engine.db, null, 'store.full', { path: this.engine.home.db, home: this.engine.home.root, message: error.message, since, until: now, durationMs: now - since, freeBytesNow: free, pid: process.pid }),
      );
    } catch {
      return null; // not writable yet after all: the next beat looks again
    }
    this.full = null;
    const store = storeCapabilities(this.engine.db).kind === 'postgres' ? 'the PostgreSQL store' : `the store ${this.engine.home.db}`;
    return `${store} can be written again (${free === null ? 'free space unknown' : `${formatBytes(free)} free`}) after ${Math.round((now - since) / 1000)} s; starting new tasks`;
  }
}
