import { writeTx, type Db } from '../store/db.js';
import { getSetting, setSetting } from '../store/settings.js';
import { liveRunnerOnHost } from './fleet.js';
import { claimableWork } from '../store/work-counts.js';
import { currentLease, leaseHeld } from '../store/leases.js';

/** A face that spawns runners waits this long between spawns, so a slow start is not doubled. */
export const RESPAWN_MS = 10_000;
const SPAWNED_AT = 'scheduler.runner_spawned_at';

/**
 * Does this home need a runner started (a face that never leads, such as an MCP session)? Yes when there
 * is work and nobody leads: on SQLite no lease still held (leaseHeld: a live leader whose beat is late under
 * load still leads), in a fleet no live runner on this host. Reads only.
 */
export function runnerWanted(db: Db, fleetHost: string | null, now = Date.now()): boolean {
  if (fleetHost !== null) {
    if (liveRunnerOnHost(db, fleetHost)) return false;
  } else {
    const lease = currentLease(db);
    if (lease && leaseHeld(lease, now)) return false;
  }
  const work = claimableWork(db);
  return work.active + work.runnable > 0;
}

/** Several sessions may see the same gap at once: true for the one that may spawn (one per RESPAWN_MS across processes). */
export function claimSpawn(db: Db, now = Date.now()): boolean {
  return writeTx(db, () => {
    const last = getSetting<number>(db, SPAWNED_AT);
    if (last !== null && now - last < RESPAWN_MS) return false;
    setSetting(db, SPAWNED_AT, now);
    return true;
  });
}
