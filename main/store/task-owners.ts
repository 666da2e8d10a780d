import { isPostgres, prep, type Db } from './db.js';

// Who still owns an active task: the runner (fleet) or leader (one home) that claimed it. A task whose
// owner stopped, was marked lost or left no row behind is stranded: nobody will end it unless recovered.

/**
 * Fleet runners (not active any more, or without a row) that still own active tasks, with their hosts
 * (null: no row). Their tasks are orphaned like those of a runner just found lost.
 */
export function strandedOwners(db: Db): { id: string; host: string | null }[] {
  return prep(
    db,
    `SELECT DISTINCT t.runner_id AS id, r.host AS host FROM tasks t LEFT JOIN runners r ON r.id = t.runner_id
      WHERE t.status IN ('starting', 'running', 'verifying') AND t.runner_id IS NOT NULL AND (r.id IS NULL OR r.state <> 'active')`,
  ).all() as { id: string; host: string | null }[];
}

/**
 * Is the owner of an active task provably not running it? In a fleet: its runner row is not active, or
 * its lease ran out. On one home: another holder leads now, or nobody does (a leader whose beats are late
 * still owns its tasks: it acts on the cancel request itself).
 */
export function ownerGone(db: Db, runnerId: string | null, now = Date.now()): boolean {
  if (!runnerId) return true;
  if (isPostgres(db)) return prep(db, `SELECT 1 AS ok FROM runners WHERE id = ? AND state = 'active' AND expires_at >= ?`).get(runnerId, now) === undefined;
  const lease = prep(db, `SELECT holder FROM leases WHERE name = 'scheduler'`).get() as { holder: string } | undefined;
  return !lease || lease.holder !== runnerId;
}
