import { assignCohort } from '../cachelab/cohort.js';
import type { Config } from '../core/config.js';
import { AppError } from '../core/errors.js';
import { appendEvent } from '../store/events.js';
import { prep, type Db } from '../store/db.js';
import { requireTask, updateTaskFields } from '../store/tasks.js';
import { needsApproval } from './create.js';
import { releaseDependents, transition } from './state.js';
import { ACTIVE, type Task, type TaskStatus } from './types.js';

/** Approve a task waiting for a person: awaiting_approval → queued. Run inside a write transaction. */
export function approveTask(db: Db, id: string, by: string): Task {
  const t = requireTask(db, id);
  if (t.status !== 'awaiting_approval') {
    throw new AppError('illegal_transition', `task ${id} is ${t.status}; only a task awaiting approval can be approved`, { status: t.status });
  }
  return transition(db, id, 'awaiting_approval', 'queued', { reason: `approved by ${by}`, fields: { approvedAt: Date.now() }, event: { by } });
}

/**
 * Cancel a task. A task that has not started is cancelled at once; a running one gets a cancel request
 * that its leader acts on (kill the process tree, then `cancelled`). Returns the task after the change.
 */
export function cancelTask(db: Db, id: string, by: string, reason?: string): Task {
  const t = requireTask(db, id);
  const why = reason ? `cancelled by ${by}: ${reason}` : `cancelled by ${by}`;
  if (t.status === 'awaiting_approval' || t.status === 'queued' || t.status === 'blocked') {
    return transition(db, id, t.status, 'cancelled', { reason: why, fields: { errorCode: 'cancelled', errorMessage: why } });
  }
  if (ACTIVE.has(t.status)) {
    if (!t.cancelRequested) {
      updateTaskFields(db, id, { cancelRequested: true });
      appendEvent(db, id, 'task.cancel_requested', { by, ...(reason ? { reason } : {}) });
    }
    return requireTask(db, id);
  }
  throw new AppError('illegal_transition', `task ${id} is ${t.status}; it can no longer be cancelled`, { status: t.status });
}

export const RETRY_STRATEGIES = ['same', 'fallback_gateway', 'deeper_profile'] as const;
export type RetryStrategy = (typeof RETRY_STRATEGIES)[number];
const RETRYABLE: TaskStatus[] = ['failed', 'timed_out', 'cancelled', 'orphaned'];

/**
 * Make a new attempt of an ended task, within its tree's retry budget. Dependents that it blocked
 * are released. `fallback_gateway` switches to the next configured gateway; `deeper_profile` raises
 * the reasoning effort one step.
 */
export function retryTask(db: Db, config: Config, id: string, strategy: RetryStrategy, by: string): Task {
  const t = requireTask(db, id);
  if (!RETRYABLE.includes(t.status)) {
    throw new AppError('illegal_transition', `task ${id} is ${t.status}; only failed, timed_out, cancelled or orphaned tasks can be retried`, { status: t.status });
  }
  const used = (prep(db, 'SELECT COALESCE(SUM(attempt - 1), 0) AS n FROM tasks WHERE root_id = ?').get(t.rootId) as { n: number }).n;
  if (used >= config.limits.retry_budget) {
    throw new AppError('forbidden', `retry budget of this task tree is used up (${used} of limits.retry_budget = ${config.limits.retry_budget})`);
  }
  const route = retryRoute(config, t, strategy);
  if (route.gateway !== t.gateway || route.effort !== t.reasoningEffort) {
    prep(db, 'UPDATE tasks SET gateway = ?, reasoning_effort = ?, model = ? WHERE id = ?').run(route.gateway, route.effort, route.model, id);
  }
  const to: TaskStatus = t.approvedAt === null && needsApproval(t.mode, t.kind) ? 'awaiting_approval' : 'queued';
  const next = transition(db, id, t.status, to, {
    reason: `retry (${strategy}) by ${by}`,
    event: { attempt: t.attempt + 1, strategy },
    fields: {
      attempt: t.attempt + 1, cancelRequested: false, errorCode: null, errorMessage: null, result: null, schemaValid: null,
      pid: null, pidStart: null, runnerId: null, startedAt: null, endedAt: null, sessionId: null,
    },
  });
  // A changed route is a different cache cohort: re-key it now so scheduling affinity sees it.
  assignCohort(db, config, next);
  releaseDependents(db, id, (d) => needsApproval(d.mode, d.kind));
  return next;
}

function retryRoute(config: Config, t: Task, strategy: RetryStrategy): { gateway: string | null; effort: Task['reasoningEffort']; model: string | null } {
  if (strategy === 'fallback_gateway') {
    const names = Object.keys(config.gateways);
    if (names.length < 2 && !(names.length === 1 && t.gateway !== names[0])) {
      throw new AppError('invalid_input', 'strategy: fallback_gateway needs another gateway in config.toml [gateways]');
    }
    const next = names[(names.indexOf(t.gateway ?? '') + 1) % names.length];
    return { gateway: next, effort: t.reasoningEffort, model: t.model };
  }
  if (strategy === 'deeper_profile') {
    const ladder = ['low', 'medium', 'high', 'xhigh'] as const;
    const cur = ladder.indexOf(t.reasoningEffort ?? 'medium');
    if (cur === ladder.length - 1) throw new AppError('invalid_input', 'strategy: deeper_profile: the task already runs at xhigh effort');
    const effort = ladder[cur + 1];
    const model = t.model === config.models.fast ? config.models.reasoning : t.model;
    return { gateway: t.gateway, effort, model };
  }
  return { gateway: t.gateway, effort: t.reasoningEffort, model: t.model };
}

/**
 * The tasks that a not-yet-runnable task waits on, transitively, which themselves wait for a person.
 * Empty when nothing upstream needs approval.
 */
export function waitingOn(db: Db, id: string): string[] {
  const rows = prep(db, 
      `WITH RECURSIVE up(id) AS (
         SELECT depends_on FROM task_deps WHERE task_id = ?
         UNION SELECT d.depends_on FROM task_deps d JOIN up ON d.task_id = up.id
       )
       SELECT t.id FROM tasks t JOIN up ON up.id = t.id WHERE t.status = 'awaiting_approval' ORDER BY t.id`,
    )
    .all(id) as { id: string }[];
  return rows.map((r) => r.id);
}
