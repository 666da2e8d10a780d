import type { StoreWriter } from '../store/engine-handle.js';
import { expireRequests } from '../requests/requests.js';

/** How often the leader looks for expired requests, in ms (expiry is counted in seconds). */
const EVERY_MS = 1000;
const lastRun = new WeakMap<StoreWriter, number>();

/**
 * The leader's sweep of questions and permission requests nobody answered in time (config.toml
 * [requests] expiry_s): their tasks end `failed` with `request_expired`. Cheap when nothing is
 * pending (a partial index); runs at most once a second per engine.
 */
export function sweepExpiredRequests(engine: StoreWriter, now = Date.now()): string[] {
  if (now - (lastRun.get(engine) ?? 0) < EVERY_MS) return [];
  lastRun.set(engine, now);
  return engine.write(() => expireRequests(engine.db, now));
}
