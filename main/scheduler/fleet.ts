import { existsSync } from 'node:fs';
import type { Config } from '../core/config.js';
import { AppError } from '../core/errors.js';
import type { Db } from '../store/db.js';
import { storeCapabilities } from '../store/capabilities.js';
import { runnerHost, type FleetIdentity } from '../store/fleet-runners.js';
import type { ClaimLimits } from '../store/claims.js';
import { canonicalPath, hostId, remoteIdentity } from '../tasks/repo-identity.js';

export { registerRunner, renewRunner, stopRunner, reapExpiredRunners, lostTasksOnHost, liveRunnerOnHost, FLEET_CANDIDATES_SQL, listFleetCandidates, claimFleetTask, unservedReason, fleetWaitingFor } from '../store/fleet-runners.js';
export type { FleetCandidate, FleetClaim, FleetIdentity } from '../store/fleet-runners.js';

/**
 * A fleet: every host runs `lightworker run` against one PostgreSQL. There is no
 * single leader: each runner registers a row in `runners` (host, repositories, slots) and renews its own
 * lease; it claims only tasks it can run — submitted on its own host, or for a repository it serves
 * (`[fleet] repos`, by a stable identity: the configured name or the remote URL) — and maps the task's
 * workspace to its own clone. A runner whose lease expires is lost: any other runner marks it so and
 * orphans its tasks; the lost runner, when it finds out, kills its own process trees (nobody else can
 * on another host).
 */

/** What this runner serves: each configured repository by its name and by its remote identity. */
export function fleetIdentity(config: Config): FleetIdentity {
  const repos = new Map<string, string>();
  for (const [name, path] of Object.entries(config.fleet.repos)) {
    const abs = canonicalPath(path);
    if (!existsSync(abs)) continue; // configured but absent here: not served (doctor says so)
    repos.set(name, abs);
    const remote = remoteIdentity(abs);
    if (remote && !repos.has(remote)) repos.set(remote, abs);
  }
  return { host: hostId(config), repos };
}

/**
 * In a fleet, a task's worktree lives on the host whose runner ran it: accept, diff and the editor must run
 * there. Throws a conflict naming that host when this is another one (no-op on SQLite, or before a claim).
 */
export function requireTaskHere(db: Db, config: Config, task: { id: string; runnerId: string | null }, verb: string): void {
  if (!storeCapabilities(db).sharedByHosts || !task.runnerId) return;
  const host = runnerHost(db, task.runnerId);
  const here = hostId(config);
  if (host !== null && host !== here) {
    throw new AppError('conflict', `task ${task.id} ran on host ${host}, where its worktree is; run \`lightworker ${verb} ${task.id}\` there (this is ${here})`, { host });
  }
}

export function fleetLimitsOf(config: Config): ClaimLimits & { fleet: number } {
  return { perRoot: config.scheduler.per_root, perRepository: config.scheduler.per_repository, fleet: config.fleet.max_concurrency };
}
