import { hostname } from 'node:os';
import { writeTx, type Db } from '../store/db.js';
import { appendEvent } from '../store/events.js';
import { isSameProcess, processStartTime } from '../runner/process.js';

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
  const r = db.prepare('SELECT * FROM leases WHERE name = ?').get(name) as LeaseRow | undefined;
  if (!r) return null;
  return { holder: r.holder, pid: r.pid, pidStart: r.pid_start, hostname: r.hostname, acquiredAt: r.acquired_at, heartbeatAt: r.heartbeat_at, expiresAt: r.expires_at };
}

/** Is the lease's holder process provably gone (same host, PID dead or recycled)? */
function holderIsDead(l: Lease): boolean {
  return l.hostname === hostname() && !isSameProcess(l.pid, l.pidStart);
}

const myStart = processStartTime(process.pid);

/**
 * Try to become (or stay) the leader: succeeds when there is no lease, it expired, we already hold it,
 * or its holder on this host is provably dead. One IMMEDIATE transaction, so exactly one contender wins.
 */
export function tryAcquireLease(db: Db, holder: string, ttlMs: number, name = LEADER_LEASE): boolean {
  return writeTx(db, () => {
    const now = Date.now();
    const cur = currentLease(db, name);
    if (cur && cur.holder !== holder && cur.expiresAt > now && !holderIsDead(cur)) return false;
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
  return db.prepare('UPDATE leases SET heartbeat_at = ?, expires_at = ? WHERE name = ? AND holder = ?').run(now, now + ttlMs, name, holder).changes === 1;
}

export function releaseLease(db: Db, holder: string, name = LEADER_LEASE): void {
  db.prepare('DELETE FROM leases WHERE name = ? AND holder = ?').run(name, holder);
}
