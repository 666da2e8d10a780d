import type { EventEmitter } from 'node:events';
import type { Config } from '../core/config.js';
import type { HomePaths } from '../core/home.js';
import type { Db } from './db.js';
import type { StoreFileId } from './integrity.js';

/**
 * What engine code needs of one open home, in the narrowest shape each caller can take. main/engine.ts
 * implements all of them (class Engine); code below it in the layers names one of these instead, so it
 * never depends on how the home was opened (which store, which watchers).
 */

/** Read the store with the home's config and paths. */
export interface StoreReader {
  readonly db: Db;
  readonly config: Config;
  readonly home: HomePaths;
}

/** …and write: `write(fn)` runs `fn` as one IMMEDIATE transaction, then publishes what it appended. */
export interface StoreWriter extends StoreReader {
  write<T>(fn: () => T): T;
  /** Publish new events soon (coalesced), after a write made outside `write`. */
  notify(): void;
}

/**
 * …and follow what is written: `events` emits 'event' (EventRow) for each appended event, 'change' after
 * each batch, 'external' when another process committed and 'config' with a reloaded config; `watch()`
 * starts noticing other processes' commits (idempotent).
 */
export interface EngineHandle extends StoreWriter {
  readonly events: EventEmitter;
  watch(): void;
  /** Apply a config.toml another process changed since the last poll, now (one stat when none did; none when a look began after `submittedAt`). */
  refreshConfig(submittedAt?: number): void;
  /** The better-sqlite3 addon the store was opened with (the desktop app's own build), for other connections. */
  readonly nativeBinding: string | undefined;
}

/** A leader's handle: it also renews its lease inside each of the engine's write transactions. */
export interface LeaderEngine extends EngineHandle {
  /** The SQLite file the store was opened from (device, inode), for the leader's look at it; null on PostgreSQL. */
  readonly storeFile: StoreFileId | null;
  /** `beat` runs at the end of each write transaction; what it returns, after that transaction committed. */
  setWriteBeat(beat: (() => (() => void) | void) | null): void;
  /** Close the store for good because of `fault` (damage found): every later call of this process is told `fault`. */
  closeStoreFor(fault: Error): void;
}
