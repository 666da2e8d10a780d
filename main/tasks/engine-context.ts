import type { Config } from '../core/config.js';
import type { HomePaths } from '../core/home.js';
import type { Db } from '../store/db.js';

/**
 * What the engine's folders below it (isolation/, runner/) use of an open home: its paths, store and current
 * config, and `write` (one transaction, then the change is announced). main/engine.ts's Engine is one; the
 * folders take this instead of importing the engine, which sits above them.
 */
export interface EngineContext {
  readonly home: HomePaths;
  readonly db: Db;
  readonly config: Config;
  write<T>(fn: () => T): T;
  /** Apply a config.toml another process changed since the last poll, now (before acting on `config`); see ConfigWatch.check. */
  refreshConfig(submittedAt?: number): void;
}
