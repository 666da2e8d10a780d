import type { Db } from '../store/db.js';
import { countByStatus } from '../store/tasks.js';
import type { FleetIdentity } from './fleet.js';
import { currentLease, leaseHeld } from '../store/leases.js';
import type { SchedulerStatus } from './service-types.js';

/**
 * What the scheduler service reports (role, counts, who leads). In a fleet the leader is this runner while it
 * leads (each runner leads its own share); on one host it is the lease's holder while its lease holds.
 */
export function readServiceStatus(db: Db, me: { holder: string; fleet: FleetIdentity | null; leading: boolean; paused: boolean }): SchedulerStatus {
  const counts = countByStatus(db);
  const lease = me.fleet
    ? me.leading
      ? { holder: me.holder, pid: process.pid, pidStart: null, hostname: me.fleet.host, acquiredAt: 0, heartbeatAt: 0, expiresAt: Infinity }
      : null
    : currentLease(db);
  return {
    role: me.leading ? 'leader' : 'standby',
    paused: me.paused,
    running: (counts.starting ?? 0) + (counts.running ?? 0) + (counts.verifying ?? 0),
    awaitingApproval: counts.awaiting_approval ?? 0,
    waitingInput: counts.waiting_input ?? 0,
    queued: counts.queued ?? 0,
    leader: lease && (me.fleet ? lease.expiresAt > Date.now() : leaseHeld(lease)) ? { holder: lease.holder, pid: lease.pid, hostname: lease.hostname } : null,
  };
}
