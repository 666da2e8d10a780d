import type { Fence } from './fence.js';
import { prep, type Db } from './db.js';
import type { TaskFieldUpdate } from './tasks.js';
import { toColumnValues } from './tasks.js';

/**
 * The state changes of the `tasks` table that are not plain field updates: status moves as
 * compare-and-set (the rule of which moves are legal stays in tasks/state.ts), and the few writes that
 * set one group of columns together.
 */

/**
 * Move the task to `to` if it is in one of `froms` now, setting `fields` too; false when it was not
 * (someone else moved it first).
 */
export function compareAndSetStatus(db: Db, id: string, froms: readonly string[], to: string, fields: TaskFieldUpdate, now: number, fence?: Fence): boolean {
  const { sets, values } = toColumnValues(fields);
  // Fenced (a runner's own move): only while the task is still the attempt that runner claimed (store/fence.ts).
  const res = prep(
    db,
    `UPDATE tasks SET status = ?, ${sets.length ? sets.join(', ') + ', ' : ''}updated_at = ?
       WHERE id = ? AND status IN (${froms.map(() => '?').join(',')})${fence ? ' AND attempt = ? AND runner_id = ?' : ''}`,
  ).run(to, ...values, now, id, ...froms, ...(fence ? [fence.attempt, fence.runnerId] : []));
  return res.changes === 1;
}

/** Block a dependent that still waits (awaiting_approval or queued) because `blockedBy` ended badly; false if it no longer waited. */
export function blockWaitingTask(db: Db, id: string, blockedBy: string, message: string, now: number): boolean {
  return (
    prep(
      db,
      `UPDATE tasks SET status = 'blocked', blocked_by = ?, error_code = 'blocked', error_message = ?, ended_at = ?, updated_at = ?
     WHERE id = ? AND status IN ('awaiting_approval', 'queued')`,
    ).run(blockedBy, message, now, now, id).changes === 1
  );
}

/** The tasks `causeId` blocked that are still blocked. */
export function tasksBlockedBy(db: Db, causeId: string): string[] {
  return (prep(db, `SELECT id FROM tasks WHERE blocked_by = ? AND status = 'blocked'`).all(causeId) as { id: string }[]).map((r) => r.id);
}

/** Queued tasks routed through `gateway`, oldest first (at most `limit`). */
export function queuedOnGateway(db: Db, gateway: string, limit: number): string[] {
  return (prep(db, `SELECT id FROM tasks WHERE gateway = ? AND status = 'queued' ORDER BY id LIMIT ?`).all(gateway, limit) as { id: string }[]).map((r) => r.id);
}

/** The tasks a task waits on, transitively, that themselves wait for a person (awaiting_approval), by id. */
export function upstreamAwaitingApproval(db: Db, id: string): string[] {
  const rows = prep(
    db,
    `WITH RECURSIVE up(id) AS (
         SELECT depends_on FROM task_deps WHERE task_id = ?
         UNION SELECT d.depends_on FROM task_deps d JOIN up ON d.task_id = up.id
       )
       SELECT t.id FROM tasks t JOIN up ON up.id = t.id WHERE t.status = 'awaiting_approval' ORDER BY t.id`,
  ).all(id) as { id: string }[];
  return rows.map((r) => r.id);
}

export function setObjective(db: Db, id: string, objective: string, now: number): void {
  prep(db, 'UPDATE tasks SET objective = ?, updated_at = ? WHERE id = ?').run(objective, now, id);
}

/** The route a retry chose: gateway, effort, model, profile and worker, together. */
export function setRoute(db: Db, id: string, route: { gateway: string | null; effort: string | null; model: string | null; profile: string | null; worker: string }): void {
  prep(db, 'UPDATE tasks SET gateway = ?, reasoning_effort = ?, model = ?, profile = ?, worker = ? WHERE id = ?').run(route.gateway, route.effort, route.model, route.profile, route.worker, id);
}

/** Where a task comes from, for runners on other hosts: its repository's identity and the submitting host. */
export function setOrigin(db: Db, id: string, repoKey: string | null, host: string): void {
  prep(db, 'UPDATE tasks SET repo_key = ?, origin_host = ? WHERE id = ?').run(repoKey, host, id);
}

/** Add one turn's tokens (and cost, when known) to the task's totals. */
export function addUsageTotals(db: Db, id: string, input: number, cached: number, output: number, costUsd: number | null): void {
  prep(db, 'UPDATE tasks SET input_tokens = input_tokens + ?, cached_tokens = cached_tokens + ?, output_tokens = output_tokens + ?, cost_usd = CASE WHEN CAST(? AS REAL) IS NULL THEN cost_usd ELSE COALESCE(cost_usd, 0) + ? END WHERE id = ?').run(
    input,
    cached,
    output,
    costUsd,
    costUsd,
    id,
  );
}

/** Set the task's cohort unless it is that already (no write, no commit notice, when unchanged). */
export function setCohort(db: Db, id: string, cohort: string): void {
  prep(db, 'UPDATE tasks SET cohort = ? WHERE id = ? AND cohort IS NOT ?').run(cohort, id, cohort);
}

/** A task's stored cohort (null for tasks created before the Cache Lab, or no such task). */
export function cohortOf(db: Db, id: string): string | null {
  const row = prep(db, 'SELECT cohort FROM tasks WHERE id = ?').get(id) as { cohort: string | null } | undefined;
  return row?.cohort ?? null;
}
