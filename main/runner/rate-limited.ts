import type { EngineContext } from '../tasks/engine-context.js';
import { appendEvent } from '../store/events.js';
import { requeueAttempt } from '../store/attempts.js';
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

/**
 * Put a rate-limited run back in the queue as the same attempt: it does not fail, spends no retry, blocks no
 * dependent, and is claimed again once its worker's (or its gateway's) pause (`inSameWrite`: the scheduler's, in this transaction)
 * ends. False when the task was moved by someone else meanwhile; `fence`: a runner that lost it changes nothing.
 */
export function requeueRateLimited(engine: EngineContext, task: Task, err: RateLimited, inSameWrite: () => void = () => undefined, fence?: Fence): boolean {
  return engine.write(() => {
    const cur = getTask(engine.db, task.id);
    if (!cur || (cur.status !== 'starting' && cur.status !== 'running')) return false;
    const now = Date.now();
    const message = err.message.split('\n')[0].slice(0, 300);
    appendEvent(engine.db, task.id, 'task.rate_limited', { attempt: task.attempt, worker: task.worker, gateway: task.gateway ?? null, until: err.retryAt ?? 0, message }, now);
    move(engine.db, task.id, cur.status, 'queued', { reason: `rate limited: ${message}`.slice(0, 300), fields: { pid: null, pidStart: null }, fence });
    requeueAttempt(engine.db, task.id, task.attempt);
    inSameWrite();
    return true;
  });
}
