/**
 * Self-fencing: a fleet runner must stop its workers before its lease can expire by its own clock, even
 * when its event loop cannot run (frozen by SIGSTOP, or blocked in a store call that waits on a server that
 * stopped answering). So the deadline is kept outside this process, by the spawner helper that forked the
 * trees (spawner-helper.py): the runner tells it, after each renewal, how long its lease is still surely
 * held minus a margin; when that passes without a newer renewal, the helper SIGKILLs every tree it holds
 * (and, as a subreaper, everything below it) and then tells the runner, which stops what it ran as
 * `orphaned` and joins the fleet again under a new id. The helper's clock is monotonic, counting suspend
 * where the system can (CLOCK_BOOTTIME). Without a helper (no python3) the runner keeps the deadline on its
 * own timer: that still fences a runner whose store calls fail, not one that is frozen.
 */

/** leader → helper: JSON {ms, mono}: the lease deadline, ms after mono (CLOCK_MONOTONIC ms); ms null: none. */
export const T_DEADLINE = 5;
/** helper → leader: JSON {killed, lateMs}: the deadline passed; every tree was killed, lateMs after it. */
export const T_FENCED = 16;

/** What a fence reports: processes signalled (null: the runner's own timer, it kills them itself), lateness. */
export interface FenceReport {
  killed: number | null;
  lateMs: number;
}

let deadlineAt: number | null = null;
let sink: ((ms: number | null, mono: number) => void) | null = null;
let localTimer: NodeJS.Timeout | null = null;
const listeners = new Set<(report: FenceReport) => void>();

/** CLOCK_MONOTONIC in ms (libuv's hrtime), the clock Python's time.monotonic() reads on the same host. */
function monoMs(): number {
  return Number(process.hrtime.bigint() / 1000n) / 1000;
}

/** Set (epoch ms) or clear the moment this runner's workers must be dead by; passed to the helper at once. */
export function setLeaseDeadline(at: number | null): void {
  deadlineAt = at;
  tell();
}

function tell(): void {
  if (localTimer) clearTimeout(localTimer);
  localTimer = null;
  if (sink) return sink(deadlineAt === null ? null : deadlineAt - Date.now(), monoMs());
  if (deadlineAt === null) return;
  const at = deadlineAt;
  localTimer = setTimeout(() => fired({ killed: null, lateMs: Date.now() - at }), Math.max(0, at - Date.now()));
  localTimer.unref();
}

/** The helper's end of it (spawner.ts): told the current deadline now and every change after; null detaches. */
export function attachDeadlineSink(fn: ((ms: number | null, mono: number) => void) | null): void {
  sink = fn;
  tell();
}

/** Called when this runner was fenced (its deadline passed); returns an unsubscribe. */
export function onSelfFence(fn: (report: FenceReport) => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** The helper said it fenced this runner. */
export function selfFenced(report: FenceReport): void {
  fired(report);
}

function fired(report: FenceReport): void {
  deadlineAt = null;
  localTimer = null;
  for (const fn of listeners) fn(report);
}

/**
 * How long before its lease's expiry a runner's trees must be dead: room for the helper to be scheduled on
 * a loaded host (a wake-up late by tens to a few hundred ms at load 10-30 on 2 cores) and for the clock error
 * between hosts (NTP: milliseconds), ttl/10 within 250 ms..1 s. Any more only fences runners that would
 * have renewed in time: a renewal is due every ttl/4 (service.ts), so a runner is fenced only after about
 * 2.6 renewals in a row failed to land (ttl - margin - ttl/4 late: 875 ms at ttl 1.5 s, 6.5 s at 10 s).
 */
export function fenceMarginMs(ttlMs: number): number {
  return Math.min(1000, Math.max(250, Math.floor(ttlMs / 10)));
}
