import { storeCapabilities } from '../store/capabilities.js';
import type { Db } from '../store/db.js';
import { runnerHost } from '../store/fleet-runners.js';
import { setSetting } from '../store/settings.js';
import { latestEventPayload } from '../store/task-history.js';
import type { Task } from './types.js';

/** `run_host.<task id>`: the host a task must run on (its worktree is there); read by the fleet's claim query. */
export const RUN_HOST_PREFIX = 'run_host.';

/**
 * The host holding an execute task's worktree and native session: that of the runner that held its last
 * attempt, else (that attempt was never claimed, e.g. a queued follow-up cancelled) the host it was last
 * placed on. Null on one home (every runner is on this machine) and for a task that never ran.
 */
export function worktreeHostOf(db: Db, t: Pick<Task, 'id' | 'kind' | 'runnerId'>): string | null {
  if (t.kind !== 'execute' || !storeCapabilities(db).sharedByHosts) return null;
  const host = t.runnerId ? runnerHost(db, t.runnerId) : null;
  if (host) return host;
  const placed = latestEventPayload(db, t.id, 'fleet.placed');
  return placed ? ((JSON.parse(placed) as { host?: string }).host ?? null) : null;
}

/**
 * Pin a new attempt that keeps the worktree (a resume, follow-up, answer or reverify) to `host`: in a fleet
 * only a runner there may claim it (store/fleet-runners.ts); a runner elsewhere has neither the worktree
 * nor the session and would start from the base, losing what the attempt was asked to continue. The pin
 * is cleared when the attempt ends (tasks/state.ts). Runs in the caller's write transaction.
 */
export function pinToHost(db: Db, taskId: string, host: string): void {
  setSetting(db, `${RUN_HOST_PREFIX}${taskId}`, host);
}
