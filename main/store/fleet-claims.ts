import { prep, type Db } from './db.js';

/**
 * Is this runner still one the fleet counts on: active, its lease valid at `now`? Read in the claim's own
 * transaction with the runner's row share-locked, so a runner that another marks lost meanwhile either
 * waits for this claim to commit (and then orphans what it claimed) or is seen lost here and claims nothing.
 */
export function runnerMayClaim(db: Db, runnerId: string, now: number): boolean {
  return prep(db, `SELECT 1 AS ok FROM runners WHERE id = ? AND state = 'active' AND expires_at >= ? FOR SHARE`).get(runnerId, now) !== undefined;
}
