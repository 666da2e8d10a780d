import type { StoreWriter as Engine } from './engine-handle.js';
import { prep, type Db } from './db.js';
import { appendEvent } from './events.js';
import { isSameProcess, processStartTime } from '../platform/proc/process.js';
import { claimTask, type Candidate, type CandidateExclusions, type ClaimLimits } from './claims.js';
import { runnerMayClaim } from './fleet-claims.js';
import { fleetSlotKey, grabClaimSlots, releaseClaimSlots, repoSlotKey } from './pg/fleet-slots.js';

// The fleet's rows (runners, their leases, claims across hosts): what scheduler/fleet.ts and the service
// ask of PostgreSQL, each a statement or a transaction's part.

export interface FleetIdentity {
  /** This host's name as runners record it. */
  host: string;
  /** Repository identities this runner serves → its local path. */
  repos: Map<string, string>;
}

const myStart = processStartTime(process.pid);

/** Register a runner: one row, active, with a lease of `ttlMs`. */
export function registerRunner(db: Db, id: string, me: FleetIdentity, slots: number, ttlMs: number, now = Date.now()): void {
  prep(db, `INSERT INTO runners (id, host, pid, pid_start, repos, slots, state, started_at, heartbeat_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?, ?)`).run(
    id, me.host, process.pid, myStart, JSON.stringify(Object.fromEntries(me.repos)), slots, now, now, now + ttlMs,
  );
  appendEvent(db, null, 'fleet.runner_started', { runner: id, host: me.host, pid: process.pid, repos: [...me.repos.keys()], slots }, now);
}

/** Renew our lease; false when it was lost (another runner marked us lost and orphaned our tasks). */
export function renewRunner(db: Db, id: string, ttlMs: number, now = Date.now()): boolean {
  return prep(db, `UPDATE runners SET heartbeat_at = ?, expires_at = ? WHERE id = ? AND state = 'active' AND expires_at >= ?`).run(now, now + ttlMs, id, now).changes === 1;
}

/** A runner that stops cleanly says so (its tasks were ended or handed back first). */
export function stopRunner(db: Db, id: string, now = Date.now()): void {
  prep(db, `UPDATE runners SET state = 'stopped', ended_at = ? WHERE id = ? AND state = 'active'`).run(now, id);
}

/**
 * Mark every runner whose lease expired as lost — and, without waiting for its lease, every runner of
 * this host whose process is provably gone (PID dead or recycled) — with a compare-and-set per runner,
 * so exactly one runner records each loss; returns them with their hosts, for the caller to orphan
 * their tasks.
 */
export function reapExpiredRunners(engine: Engine, host: string, now = Date.now()): { id: string; host: string; pid: number; pidStart: string | null }[] {
  const db = engine.db;
  const candidates = prep(db, `SELECT id, host, pid, pid_start AS "pidStart", expires_at AS "expiresAt" FROM runners WHERE state = 'active' AND (expires_at < ? OR host = ?)`).all(now, host) as {
    id: string;
    host: string;
    pid: number;
    pidStart: string | null;
    expiresAt: number;
  }[];
  const gone = candidates.filter((r) => r.expiresAt < now || (r.host === host && !isSameProcess(r.pid, r.pidStart)));
  return gone.filter((r) =>
    engine.write(() => {
      if (prep(db, `UPDATE runners SET state = 'lost', ended_at = ? WHERE id = ? AND state = 'active' AND expires_at = ?`).run(now, r.id, r.expiresAt).changes !== 1) return false;
      appendEvent(db, null, 'fleet.runner_lost', { runner: r.id, host: r.host, pid: r.pid, why: r.expiresAt < now ? 'lease expired' : 'its process is gone' }, now);
      return true;
    }),
  ).map(({ id, host: h, pid, pidStart }) => ({ id, host: h, pid, pidStart }));
}

/**
 * Tasks of this host's lost runners (killed, or cut off for longer than the lease) from the last day:
 * their process trees may still run here, and nobody else can kill them. A runner starting on this
 * host sweeps them (PID + start time and the tree marker decide; a recycled PID is never touched).
 */
export function lostTasksOnHost(db: Db, host: string, now = Date.now()): { id: string; attempt: number; pid: number | null; pidStart: string | null }[] {
  return prep(
    db,
    `SELECT t.id, t.attempt, t.pid, t.pid_start AS pidStart FROM tasks t JOIN runners r ON r.id = t.runner_id
      WHERE r.host = ? AND r.state = 'lost' AND r.ended_at > ? AND t.status IN ('orphaned', 'starting', 'running', 'verifying')`,
  ).all(host, now - 24 * 3600_000) as { id: string; attempt: number; pid: number | null; pidStart: string | null }[];
}

/** Is a live runner of the fleet on this host (an MCP session then has no runner to start)? */
export function liveRunnerOnHost(db: Db, host: string, now = Date.now()): boolean {
  return prep(db, `SELECT 1 AS x FROM runners WHERE state = 'active' AND host = ? AND expires_at >= ? LIMIT 1`).get(host, now) !== undefined;
}

/** A fleet candidate: plus where it came from, to map its workspace here. */
export interface FleetCandidate extends Candidate {
  repoKey: string | null;
  originHost: string | null;
}

/**
 * The fleet's dispatch query: the ready set as on one host, narrowed to tasks this runner can run
 * (submitted here, or for a repository it serves), with the per-repository limit counted across the
 * fleet by repository identity (hosts have different paths for one repository). A task pinned to a host
 * (`run_host.<id>`: an execute task resumed where its worktree is, tasks/auto-resume.ts) is claimed there only.
 */
export const FLEET_CANDIDATES_SQL = `SELECT t.id, t.root_id AS rootId, t.workspace, t.worker, t.priority, t.cohort AS cohort, t.repo_key AS repoKey, t.origin_host AS originHost
       FROM tasks t
       WHERE t.status = 'queued' AND t.deps_pending = 0
         AND (t.origin_host = ? OR t.repo_key IN (SELECT value FROM json_each(?)))
         AND NOT EXISTS (SELECT 1 FROM settings h WHERE h.key = 'run_host.' || t.id AND h.value <> ?)
         AND t.id NOT IN (SELECT value FROM json_each(?))
         AND t.worker NOT IN (SELECT value FROM json_each(?))
         AND t.root_id NOT IN (SELECT value FROM json_each(?))
         AND COALESCE(t.gateway, '') NOT IN (SELECT value FROM json_each(?))
         AND (SELECT COUNT(*) FROM tasks a WHERE a.status IN ('starting','running','verifying') AND a.root_id = t.root_id)
             < COALESCE((SELECT CAST(json_extract(s.value, '$.concurrency') AS INTEGER) FROM settings s WHERE s.key = 'root_budget.' || t.root_id), ?)
         AND (SELECT COUNT(*) FROM tasks a WHERE a.status IN ('starting','running','verifying') AND COALESCE(a.repo_key, a.workspace) = COALESCE(t.repo_key, t.workspace)) < ?
       ORDER BY t.priority DESC, t.id
       LIMIT ?`;

export function listFleetCandidates(db: Db, me: FleetIdentity, limits: ClaimLimits, excludeWorkers: string[], skipIds: string[] = [], max = 64, exclude: CandidateExclusions = {}): FleetCandidate[] {
  return prep(db, FLEET_CANDIDATES_SQL).all(me.host, JSON.stringify([...me.repos.keys()]), JSON.stringify(me.host), JSON.stringify(skipIds), JSON.stringify(excludeWorkers), JSON.stringify(exclude.roots ?? []), JSON.stringify(exclude.gateways ?? []), limits.perRoot, limits.perRepository, max) as FleetCandidate[];
}

/**
 * `lost`: this runner is no longer active or its lease ran out (it claims nothing until it joins again).
 * `busy`: free slots exist, or the task is still queued, but other claims hold them this instant (try again shortly).
 */
export type FleetClaim = 'claimed' | 'taken' | 'fleet_full' | 'lost' | 'busy';

/**
 * Claim one task for this runner, in the caller's write transaction. The runner's own row is read FOR
 * SHARE (a runner marking it lost waits for this claim, or this claim sees it lost); the task row is taken
 * FOR UPDATE SKIP LOCKED, then one slot of each limit — the fleet, the task's repository (by identity: hosts
 * have different paths for one repository), its root (store/pg/fleet-slots.ts) — also SKIP LOCKED: no claim
 * waits for another, there is no fleet-wide lock, and no limit is exceeded. A task from another host gets
 * this runner's path for its repository.
 */
export function claimFleetTask(db: Db, c: FleetCandidate, me: FleetIdentity, runnerId: string, limits: ClaimLimits & { fleet: number }, now = Date.now()): FleetClaim {
  const began = performance.now();
  if (!runnerMayClaim(db, runnerId, Date.now())) return 'lost';
  const row = prep(db, `SELECT id FROM tasks WHERE id = ? AND status = 'queued' FOR UPDATE SKIP LOCKED`).get(c.id);
  // Still queued but locked: another claim has it this instant (and may yet let go of it).
  if (!row) return prep(db, `SELECT 1 AS x FROM tasks WHERE id = ? AND status = 'queued'`).get(c.id) ? 'busy' : 'taken';
  const fleetKey = { key: fleetSlotKey(), limit: limits.fleet };
  const grab = grabClaimSlots(db, c.id, fleetKey, { key: repoSlotKey(c.repoKey ?? c.workspace), limit: limits.perRepository }, c.rootId, limits.perRoot);
  if (!grab.ok) return grab.full === fleetKey.key ? 'fleet_full' : grab.full ? 'taken' : 'busy';
  if (!claimTask(db, c.id, runnerId, now)) {
    releaseClaimSlots(db, c.id);
    return 'taken';
  }
  const local = c.originHost === me.host ? c.workspace : c.repoKey ? me.repos.get(c.repoKey) : undefined;
  if (local && local !== c.workspace) prep(db, 'UPDATE tasks SET workspace = ? WHERE id = ?').run(local, c.id);
  appendEvent(db, c.id, 'fleet.placed', { runner: runnerId, host: me.host, workspace: local ?? c.workspace, submittedWorkspace: c.workspace, repo: c.repoKey, originHost: c.originHost, claimMs: Math.round((performance.now() - began) * 100) / 100 }, now);
  return 'claimed';
}

/**
 * Why a queued task of the fleet is not picked up, when the reason is that nobody can run it: no live
 * runner on the host it was submitted on serves it, and none serves its repository. Null when some runner can.
 */
export function unservedReason(db: Db, t: { id?: string; repo_key: string | null; origin_host: string | null }, now = Date.now()): string | null {
  if (!t.origin_host) return null; // not a fleet task
  const runners = prep(db, `SELECT host, repos FROM runners WHERE state = 'active' AND expires_at >= ?`).all(now) as { host: string; repos: string }[];
  const pinned = t.id ? prep(db, 'SELECT value FROM settings WHERE key = ?').get(`run_host.${t.id}`) as { value: string } | undefined : undefined;
  if (pinned) {
    const host = JSON.parse(pinned.value) as string;
    if (runners.some((r) => r.host === host)) return null;
    return `its worktree is on host ${host}, where no live runner is: start \`lightworker run\` there (or cancel it and retry it with --strategy same for a fresh worktree elsewhere)`;
  }
  if (runners.some((r) => r.host === t.origin_host || (t.repo_key !== null && t.repo_key in (JSON.parse(r.repos) as Record<string, string>)))) return null;
  const what = t.repo_key ? `repository ${t.repo_key}` : `its workspace (a folder without a remote, on host ${t.origin_host})`;
  return `no live runner serves ${what}: start \`lightworker run\` on ${t.origin_host}${t.repo_key ? ` or on a host with [fleet] repos naming ${t.repo_key}` : ''}`;
}

/** `unservedReason` for a task by id (null when it is not a fleet task or some runner can run it). */
export function fleetWaitingFor(db: Db, id: string): string | null {
  const row = prep(db, 'SELECT id, repo_key, origin_host FROM tasks WHERE id = ?').get(id) as { id: string; repo_key: string | null; origin_host: string | null } | undefined;
  return row ? unservedReason(db, row) : null;
}

/** The host a runner ran on, or null when no such runner is recorded. */
export function runnerHost(db: Db, runnerId: string): string | null {
  const row = prep(db, 'SELECT host FROM runners WHERE id = ?').get(runnerId) as { host: string } | undefined;
  return row?.host ?? null;
}
