import { hostname } from 'node:os';
import { prep, writeTx, type Db } from './db.js';
import { appendEvent } from './events.js';
import { isSameProcess, processStartTime } from '../platform/proc/process.js';

export const LEADER_LEASE = 'scheduler';

export interface Lease {
  holder: string;
  pid: number;
  pidStart: string | null;
  hostname: string | null;
  acquiredAt: number;
  heartbeatAt: number;
  expiresAt: number;
}

interface LeaseRow {
  holder: string;
  pid: number;
  pid_start: string | null;
  hostname: string | null;
  acquired_at: number;
  heartbeat_at: number;
  expires_at: number;
}

export function currentLease(db: Db, name = LEADER_LEASE): Lease | null {
  const r = prep(db, 'SELECT * FROM leases WHERE name = ?').get(name) as LeaseRow | undefined;
  if (!r) return null;
  return { holder: r.holder, pid: r.pid, pidStart: r.pid_start, hostname: r.hostname, acquiredAt: r.acquired_at, heartbeatAt: r.heartbeat_at, expiresAt: r.expires_at };
}

/**
 * How long past its last heartbeat the lease of a holder still alive on this host stays its own: ten of
 * its ttls, at least 30 s. A live leader whose beat is late (its process starved of CPU by a hundred
 * clients, its write waiting behind theirs) is not dead: taking its lease would orphan the tasks it still
 * runs. A holder that died (PID gone or recycled) loses the lease at once; one that stopped (SIGSTOP, a hung
 * event loop) after this long.
 */
export function liveHolderGraceMs(l: Lease): number {
  return Math.max(10 * (l.expiresAt - l.heartbeatAt), 30_000);
}

/**
 * Does the lease still belong to its holder at `now`? Not when its holder on this host is provably dead;
 * for a holder alive on this host, until its heartbeat is older than liveHolderGraceMs; for one on another
 * host (whose process cannot be checked), until it expires.
 */
export function leaseHeld(l: Lease, now = Date.now()): boolean {
  if (l.hostname !== hostname()) return l.expiresAt > now;
  if (!isSameProcess(l.pid, l.pidStart)) return false;
  return l.expiresAt > now || now - l.heartbeatAt < liveHolderGraceMs(l);
}

const myStart = processStartTime(process.pid);

/**
 * Try to become (or stay) the leader: succeeds when there is no lease, we already hold it, or it is no
 * longer held (leaseHeld: its holder on this host died, or stopped beating long ago; one elsewhere let it
 * expire). One IMMEDIATE transaction, so exactly one contender wins.
 */
export function tryAcquireLease(db: Db, holder: string, ttlMs: number, name = LEADER_LEASE): boolean {
  // Looked at first without the write lock: a standby polling a live leader's lease takes no lock at all.
  const seen = currentLease(db, name);
  if (seen && seen.holder !== holder && leaseHeld(seen)) return false;
  return writeTx(db, () => {
    const now = Date.now();
    const cur = currentLease(db, name);
    if (cur && cur.holder !== holder && leaseHeld(cur, now)) return false;
    db.prepare(
      `INSERT INTO leases (name, holder, pid, pid_start, hostname, acquired_at, heartbeat_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(name) DO UPDATE SET holder = excluded.holder, pid = excluded.pid, pid_start = excluded.pid_start,
         hostname = excluded.hostname, acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at`,
    ).run(name, holder, process.pid, myStart, hostname(), cur?.holder === holder ? cur.acquiredAt : now, now, now + ttlMs);
    if (cur?.holder !== holder) {
      appendEvent(db, null, 'scheduler.leader', { holder, pid: process.pid, previous: cur ? { holder: cur.holder, pid: cur.pid } : null });
    }
    return true;
  });
}

/** Extend our lease; false when someone else holds it now (we lost leadership). */
export function renewLease(db: Db, holder: string, ttlMs: number, name = LEADER_LEASE): boolean {
  const now = Date.now();
  return prep(db, 'UPDATE leases SET heartbeat_at = ?, expires_at = ? WHERE name = ? AND holder = ?').run(now, now + ttlMs, name, holder).changes === 1;
}

export function releaseLease(db: Db, holder: string, name = LEADER_LEASE): void {
  db.prepare('DELETE FROM leases WHERE name = ? AND holder = ?').run(name, holder);
}
