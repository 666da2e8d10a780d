import type { Config } from '../core/config.js';
import type { Db } from '../store/db.js';
import { deleteSetting, getSetting, setSetting, settingsWithPrefix } from '../store/settings.js';

/**
 * Why a worker takes no new task now, kept in settings so every process (and a new leader) sees it: a
 * provider's rate limit (until the reset its CLI named, else a doubling backoff) or an open circuit breaker
 * (too many infrastructure failures in a row; a cool-down that doubles each time it opens again).
 */
export interface WorkerPause {
  until: number;
  backoffMs: number;
  reason: string;
  cause?: 'rate_limit' | 'breaker';
}

/** The breaker's count of a worker's infrastructure failures in a row, and how often it opened since it last closed. */
export interface BreakerState {
  failures: number;
  last: string;
  opened: number;
  cooldownMs: number;
}

export const PAUSE_PREFIX = 'scheduler.pause.';
const BREAKER_PREFIX = 'scheduler.breaker.';
const BACKOFF_MIN_MS = 5_000;
const BACKOFF_MAX_MS = 5 * 60_000;

const clock = (t: number) => new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The worker's pause, while it lasts (null once it has passed). */
export function activePause(db: Db, worker: string, now = Date.now()): WorkerPause | null {
  const p = getSetting<WorkerPause>(db, PAUSE_PREFIX + worker);
  return p && p.until > now ? p : null;
}

/** Every pause still in force, by worker. */
export function activePauses(db: Db, now = Date.now()): { worker: string; pause: WorkerPause }[] {
  return settingsWithPrefix<WorkerPause>(db, PAUSE_PREFIX)
    .filter((p) => p.value.until > now)
    .map((p) => ({ worker: p.key.slice(PAUSE_PREFIX.length), pause: p.value }));
}

export function breakerOf(db: Db, worker: string): BreakerState | null {
  return getSetting<BreakerState>(db, BREAKER_PREFIX + worker);
}

/** The breaker opened and its cool-down passed: the worker may take one probe task, no more, until one ends. */
export function isHalfOpen(db: Db, config: Config, worker: string, now = Date.now()): boolean {
  const b = breakerOf(db, worker);
  return b !== null && b.failures >= config.breaker.failures && activePause(db, worker, now) === null;
}

/**
 * A rate limit: the worker takes no task until `retryAt` (what its CLI said), else for a backoff that doubles
 * while it stays limited (5 s to 5 min). A longer pause already set (an open breaker) stays. In the caller's transaction.
 */
export function pauseForRateLimit(db: Db, worker: string, taskId: string, retryAt: number | null, now = Date.now()): WorkerPause {
  const prev = getSetting<WorkerPause>(db, PAUSE_PREFIX + worker);
  const backoffMs = retryAt !== null ? Math.max(1000, retryAt - now) : Math.min(BACKOFF_MAX_MS, prev?.cause === 'rate_limit' ? prev.backoffMs * 2 : BACKOFF_MIN_MS);
  const until = retryAt ?? now + backoffMs;
  if (prev && prev.until > until) return prev;
  const pause: WorkerPause = { until, backoffMs, cause: 'rate_limit', reason: `worker ${worker} rate limited (task ${taskId}); retrying at ${clock(until)}${retryAt !== null ? ' (the reset its CLI named)' : ' (backoff)'}` };
  setSetting(db, PAUSE_PREFIX + worker, pause);
  return pause;
}

/**
 * An infrastructure failure of the worker (crash on start, auth, a 5xx, output it could not parse). The
 * `breaker.failures`-th in a row opens the breaker: no new task for `cooldown_s`, doubled each time it opens
 * again without a success between (up to `max_cooldown_s`). Returns the pause it set, or null. In the caller's transaction.
 */
export function noteInfraFailure(db: Db, config: Config, worker: string, message: string, now = Date.now()): WorkerPause | null {
  const prev = breakerOf(db, worker) ?? { failures: 0, last: '', opened: 0, cooldownMs: 0 };
  const last = message.split('\n')[0].slice(0, 200);
  const st: BreakerState = { ...prev, failures: prev.failures + 1, last };
  let pause: WorkerPause | null = null;
  // Already open (tasks that were running when it opened end now): counted, not opened again.
  if (st.failures >= config.breaker.failures && !activePause(db, worker, now)) {
    st.opened = prev.opened + 1;
    st.cooldownMs = Math.min(config.breaker.max_cooldown_s * 1000, config.breaker.cooldown_s * 1000 * 2 ** (st.opened - 1));
    const until = now + st.cooldownMs;
    pause = { until, backoffMs: st.cooldownMs, cause: 'breaker', reason: `worker ${worker} paused: ${st.failures} failures in a row (last: ${last}); retrying at ${clock(until)}` };
    setSetting(db, PAUSE_PREFIX + worker, pause);
  }
  setSetting(db, BREAKER_PREFIX + worker, st);
  return pause;
}

/** A turn of the worker succeeded: its breaker closes and a pause it had ends. Writes only when there is something to clear. */
export function noteWorkerOk(db: Db, worker: string, write: (fn: () => void) => void): void {
  const b = breakerOf(db, worker);
  const p = getSetting<WorkerPause>(db, PAUSE_PREFIX + worker);
  if (!b && !p) return;
  write(() => {
    deleteSetting(db, BREAKER_PREFIX + worker);
    deleteSetting(db, PAUSE_PREFIX + worker);
  });
}

/** What a person or an agent reads about a worker that waits: the pause's reason, or the half-open probe. */
export function workerWaitReason(db: Db, config: Config, worker: string, now = Date.now()): string | null {
  const p = activePause(db, worker, now);
  if (p) return p.reason;
  if (isHalfOpen(db, config, worker, now)) {
    const b = breakerOf(db, worker)!;
    return `worker ${worker}: breaker half-open after ${b.failures} failures in a row (last: ${b.last}); one probe task runs, the rest wait for its outcome`;
  }
  return null;
}
