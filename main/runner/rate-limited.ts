import type { EngineContext } from '../tasks/engine-context.js';
import { assignCohort } from '../cachelab/cohort.js';
import { appendEvent } from '../store/events.js';
import { requeueAttempt } from '../store/attempts.js';
import { setRoute } from '../store/task-moves.js';
import { getTask } from '../store/tasks.js';
import { move } from '../tasks/state.js';
import type { Task } from '../tasks/types.js';
import type { Fence } from '../store/fence.js';

/** A turn the provider refused for a rate limit or quota: the run goes back to the queue, not to a failure. */
export class RateLimited extends Error {
  /** When the CLI said the provider takes requests again (ms), or null. */
  constructor(message: string, readonly retryAt: number | null) {
    super(message);
  }
}

/** The model's other route a rate-limited task moves to instead of waiting: its gateway and the provider's model name there. */
export interface RouteMove {
  gateway: string;
  model: string;
  route: 'primary' | 'fallback';
  /** The reset of the gateway it leaves (ms). */
  until: number;
  /** For people: `rate limited on gateway a until 20:41:05 UTC; moved to fallback route b/provider-b/gpt-5.5`. */
  message: string;
}

/**
 * Put a rate-limited run back in the queue as the same attempt: it does not fail, spends no retry, blocks no
 * dependent, and is claimed again once its worker's (or its gateway's) pause ends — or at once on its model's
 * other route, when `inSameWrite` (the scheduler's pause, in this transaction) returns one. False when the task
 * was moved by someone else meanwhile; `fence`: a runner that lost it changes nothing.
 */
export function requeueRateLimited(engine: EngineContext, task: Task, err: RateLimited, inSameWrite: () => RouteMove | null | void = () => undefined, fence?: Fence): boolean {
  return engine.write(() => {
    const cur = getTask(engine.db, task.id);
    if (!cur || (cur.status !== 'starting' && cur.status !== 'running')) return false;
    const now = Date.now();
    const message = err.message.split('\n')[0].slice(0, 300);
    appendEvent(engine.db, task.id, 'task.rate_limited', { attempt: task.attempt, worker: task.worker, gateway: task.gateway ?? null, until: err.retryAt ?? 0, message }, now);
    const moved = inSameWrite() ?? null;
    const reason = moved ? moved.message : `rate limited: ${message}`;
    move(engine.db, task.id, cur.status, 'queued', { reason: reason.slice(0, 300), fields: { pid: null, pidStart: null }, fence });
    requeueAttempt(engine.db, task.id, task.attempt);
    if (moved) applyRouteMove(engine, cur, moved, now);
    return true;
  });
}

/** Send a task (queued, or being requeued) to its model's other route, saying why. In the caller's transaction. */
export function applyRouteMove(engine: Pick<EngineContext, 'db' | 'config'>, t: Task, moved: RouteMove, now = Date.now()): void {
  setRoute(engine.db, t.id, { gateway: moved.gateway, effort: t.reasoningEffort, model: t.model, profile: t.profile, worker: t.worker });
  appendEvent(engine.db, t.id, 'task.rerouted', { attempt: t.attempt, from: t.gateway ?? '', to: moved.gateway, model: moved.model, route: moved.route, until: moved.until, message: moved.message }, now);
  // Another gateway is another cache cohort: re-keyed now so scheduling affinity sees it.
  assignCohort(engine.db, engine.config, getTask(engine.db, t.id)!);
}
