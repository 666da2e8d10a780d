import type { Config } from '../core/config.js';
import type { Db } from '../store/db.js';
import { deleteSetting, getSetting, setSetting, settingsWithPrefix } from '../store/settings.js';

/**
 * Why a worker, or a gateway, takes no new task now, kept in settings so every process (and a new leader)
 * sees it: a provider's rate limit (until the reset its CLI named, else a doubling backoff) or an open circuit
 * breaker (too many infrastructure failures in a row; a cool-down that doubles each time it opens again).
 * Each is kept under a key: a worker's name, or `gateway:<name>` (gatewayKey) for a gateway, whose failures
 * are counted across every worker routed through it.
 */
export interface WorkerPause {
  /** When it was set (absent in pauses an older version wrote): a start before this was not a start while paused. */
  since?: number;
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
const GATEWAY = 'gateway:';

/** The key a gateway's breaker and pause are kept under (a worker's is its name). */
export function gatewayKey(name: string): string {
  return GATEWAY + name;
}

/** `worker codex` or `gateway fake`: how messages name the key's owner. */
function subjectOf(key: string): string {
  return key.startsWith(GATEWAY) ? `gateway ${key.slice(GATEWAY.length)}` : `worker ${key}`;
}

/** Every gateway pause still in force, by gateway name. */
export function activeGatewayPauses(db: Db, now = Date.now()): { gateway: string; pause: WorkerPause }[] {
  return activePauses(db, now, true).map((p) => ({ gateway: p.worker.slice(GATEWAY.length), pause: p.pause }));
}

/** The pause of a worker (or `gateway:<name>`), while it lasts (null once it has passed). */
export function activePause(db: Db, key: string, now = Date.now()): WorkerPause | null {
  const p = getSetting<WorkerPause>(db, PAUSE_PREFIX + key);
  return p && p.until > now ? p : null;
}

/** Every worker pause still in force, by worker (`gateways`: the gateways' instead, keyed `gateway:<name>`). */
export function activePauses(db: Db, now = Date.now(), gateways = false): { worker: string; pause: WorkerPause }[] {
  return settingsWithPrefix<WorkerPause>(db, PAUSE_PREFIX)
    .filter((p) => p.value.until > now && p.key.startsWith(PAUSE_PREFIX + GATEWAY) === gateways)
    .map((p) => ({ worker: p.key.slice(PAUSE_PREFIX.length), pause: p.value }));
}

export function breakerOf(db: Db, key: string): BreakerState | null {
  return getSetting<BreakerState>(db, BREAKER_PREFIX + key);
}

/** The breaker opened and its cool-down passed: the worker (gateway) may take one probe task, no more, until one ends. */
export function isHalfOpen(db: Db, config: Config, key: string, now = Date.now()): boolean {
  const b = breakerOf(db, key);
  return b !== null && b.failures >= config.breaker.failures && activePause(db, key, now) === null;
}

/** `20:41:05 UTC`, with the date in front when it is not today's (a quota reset days away). */
export function wallClock(t: number, now: number): string {
  const iso = new Date(t).toISOString();
  const day = iso.slice(0, 10) === new Date(now).toISOString().slice(0, 10) ? '' : `${iso.slice(0, 10)} `;
  return `${day}${iso.slice(11, 19)} UTC`;
}

/**
 * A rate limit: the worker (`gateway:<name>` for a task routed through a gateway, whose provider said it)
 * takes no task until `retryAt` (what its CLI said), else for a backoff that doubles while it stays limited
 * (5 s to 5 min). A longer pause already set (an open breaker) stays. In the caller's transaction.
 */
export function pauseForRateLimit(db: Db, key: string, taskId: string, retryAt: number | null, now = Date.now()): WorkerPause {
  const prev = getSetting<WorkerPause>(db, PAUSE_PREFIX + key);
  const backoffMs = retryAt !== null ? Math.max(1000, retryAt - now) : Math.min(BACKOFF_MAX_MS, prev?.cause === 'rate_limit' ? prev.backoffMs * 2 : BACKOFF_MIN_MS);
  const until = retryAt ?? now + backoffMs;
  if (prev && prev.until > until) return prev;
  const why = retryAt !== null ? 'the reset its CLI named' : 'backoff';
  const reason = key.startsWith(GATEWAY)
    ? `${subjectOf(key)} rate-limited until ${wallClock(until, now)} (task ${taskId}, ${why}); every task routed to it waits`
    : `worker ${key} rate limited (task ${taskId}); retrying at ${clock(until)} (${why})`;
  const pause: WorkerPause = { since: now, until, backoffMs, cause: 'rate_limit', reason };
  setSetting(db, PAUSE_PREFIX + key, pause);
  return pause;
}

/**
 * An infrastructure failure of the worker (crash on start, auth, a 5xx, output it could not parse). The
 * `breaker.failures`-th in a row opens the breaker: no new task for `cooldown_s`, doubled each time it opens
 * again without a success between (up to `max_cooldown_s`). Returns the pause it set, or null. In the caller's transaction.
 */
export function noteInfraFailure(db: Db, config: Config, key: string, message: string, now = Date.now()): WorkerPause | null {
  const prev = breakerOf(db, key) ?? { failures: 0, last: '', opened: 0, cooldownMs: 0 };
  const last = message.split('\n')[0].slice(0, 200);
  const st: BreakerState = { ...prev, failures: prev.failures + 1, last };
  let pause: WorkerPause | null = null;
  // Already open (tasks that were running when it opened end now): counted, not opened again.
  if (st.failures >= config.breaker.failures && !activePause(db, key, now)) {
    st.opened = prev.opened + 1;
    st.cooldownMs = Math.min(config.breaker.max_cooldown_s * 1000, config.breaker.cooldown_s * 1000 * 2 ** (st.opened - 1));
    const until = now + st.cooldownMs;
    pause = { since: now, until, backoffMs: st.cooldownMs, cause: 'breaker', reason: `${subjectOf(key)} paused: ${st.failures} failures in a row (last: ${last}); retrying at ${clock(until)}` };
    setSetting(db, PAUSE_PREFIX + key, pause);
  }
  setSetting(db, BREAKER_PREFIX + key, st);
  return pause;
}

/** A turn of the worker (through the gateway) succeeded: its breaker closes and a pause it had ends. Writes only when there is something to clear. */
export function noteWorkerOk(db: Db, key: string, write: (fn: () => void) => void): void {
  const b = breakerOf(db, key);
  const p = getSetting<WorkerPause>(db, PAUSE_PREFIX + key);
  if (!b && !p) return;
  write(() => {
    deleteSetting(db, BREAKER_PREFIX + key);
    deleteSetting(db, PAUSE_PREFIX + key);
  });
}

/** What a person or an agent reads about a worker (gateway) that waits: the pause's reason, or the half-open probe. */
export function workerWaitReason(db: Db, config: Config, key: string, now = Date.now()): string | null {
  const p = activePause(db, key, now);
  if (p) return p.reason;
  if (isHalfOpen(db, config, key, now)) {
    const b = breakerOf(db, key)!;
    return `${subjectOf(key)}: breaker half-open after ${b.failures} failures in a row (last: ${b.last}); one probe task runs, the rest wait for its outcome`;
  }
  return null;
}

/**
 * A run's breaker bookkeeping: a good turn closes its worker's breaker and its gateway's; an infrastructure
 * failure counts for the worker, and for the gateway too when it was the gateway's fault (a 5xx, its auth
 * refused), whichever worker met it.
 */
export function breakerHooks(engine: { db: Db; config: Config; write<T>(fn: () => T): T }, gateway: string | null) {
  return {
    onWorkerOk: (worker: string) => {
      noteWorkerOk(engine.db, worker, (fn) => engine.write(fn));
      if (gateway) noteWorkerOk(engine.db, gatewayKey(gateway), (fn) => engine.write(fn));
    },
    onInfraFailure: (worker: string, message: string, byGateway: boolean) =>
      engine.write(() => {
        noteInfraFailure(engine.db, engine.config, worker, message);
        if (gateway && byGateway) noteInfraFailure(engine.db, engine.config, gatewayKey(gateway), message);
      }),
  };
}
