import type { Config } from '../core/config.js';
import { findProfile } from '../core/profiles.js';
import type { Db } from '../store/db.js';
import { routedModel, upstreamModel } from '../tasks/route-rule.js';
import type { Task } from '../tasks/types.js';
import { applyRouteMove, type RouteMove } from '../runner/rate-limited.js';
import { queuedOnGateway } from '../store/task-moves.js';
import { getTask } from '../store/tasks.js';
import type { EngineContext } from '../tasks/engine-context.js';
import { resolveAuth, workerAuthSettings } from '../workers/credentials.js';
import { gatewayRoute } from '../workers/routing.js';
import { activePause, gatewayKey, isHalfOpen, pauseForRateLimit, wallClock, type WorkerPause } from './worker-pauses.js';

/** How many queued tasks of a just-paused gateway one rate limit moves to their other route (the rest wait). */
const MOVE_QUEUED_MAX = 500;

/**
 * A run's rate-limit hook: through a gateway the limit is its provider's, so the gateway waits (every worker
 * routed to it), not the worker; the task itself, and the tasks queued for that gateway, take their model's
 * other route when that one can run them sooner.
 */
export function rateLimitHook(engine: Pick<EngineContext, 'db' | 'config'>, task: Task | null, id: string, gateway: string | null) {
  return (worker: string, retryAt: number | null): RouteMove | null => {
    const pause = pauseForRateLimit(engine.db, gateway ? gatewayKey(gateway) : worker, id, retryAt);
    if (!gateway) return null;
    for (const qid of queuedOnGateway(engine.db, gateway, MOVE_QUEUED_MAX)) {
      const q = getTask(engine.db, qid)!;
      const moved = rateLimitRoute(engine.db, engine.config, q, gateway, pause);
      if (moved) applyRouteMove(engine, q, moved);
    }
    return task ? rateLimitRoute(engine.db, engine.config, task, gateway, pause) : null;
  };
}

/**
 * Where a task rate-limited on `gateway` goes instead of waiting for `pause` (that gateway's, just set): its
 * model's other route ([models.routes."M"] primary/fallback), as the same attempt, when that route's gateway
 * can take it sooner — not paused, or rate-limited until an earlier reset (then it waits for that one). Null
 * (the task waits here) when the model has no other route, the other gateway's breaker is open or half-open
 * (a task moved there would meet the failures that opened it, or crowd its probe), or the worker has no
 * credential for it here (the run would fail for a missing key instead of waiting). In the
 * requeue's transaction, so no claim sees the task between its pause and its move.
 */
export function rateLimitRoute(db: Db, config: Config, task: Task, gateway: string, pause: WorkerPause, now = Date.now(), env: NodeJS.ProcessEnv = process.env): RouteMove | null {
  const { model } = routedModel(config, task, task.profile ? findProfile(config, task.profile) : null);
  const routes = model ? config.models.routes[model] : undefined;
  if (!model || !routes?.fallback) return null;
  const [route, other] = routes.primary.gateway === gateway ? (['fallback', routes.fallback] as const) : routes.fallback.gateway === gateway ? (['primary', routes.primary] as const) : [null, null];
  if (!route || other.gateway === gateway) return null;
  if (!config.gateways[other.gateway] || !resolveAuth(task.worker, workerAuthSettings(config, task.worker), gatewayRoute(config, other.gateway, env), env).ok) return null;
  const key = gatewayKey(other.gateway);
  const there = activePause(db, key, now);
  if (there && (there.cause !== 'rate_limit' || there.until >= pause.until)) return null;
  if (!there && isHalfOpen(db, config, key, now)) return null;
  const upstream = upstreamModel(config, model, other.gateway);
  const later = there ? ` (itself rate-limited until ${wallClock(there.until, now)}, the earlier reset)` : '';
  return {
    gateway: other.gateway,
    model: upstream,
    route,
    until: pause.until,
    message: `rate limited on gateway ${gateway} until ${wallClock(pause.until, now)}; moved to ${route} route ${other.gateway}/${upstream}${later}`,
  };
}
