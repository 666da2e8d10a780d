/**
 * Self-fencing: a fleet runner must stop its workers before its lease can expire by its own clock, even
 * when its event loop cannot run (frozen by SIGSTOP, or blocked in a store call that waits on a server that
 * stopped answering). So the deadline is kept outside this process, by the spawner helper that forked the
 * trees (spawner-helper.py): the runner tells it, after each renewal, how long its lease is
 * still surely held minus a margin; when that passes without a newer renewal, the helper SIGKILLs every
 * tree it holds (and, as a subreaper, everything below it) and then tells the runner, which stops what it
 * ran as `orphaned` and joins the fleet again under a new id. The helper's clock is monotonic, counting
 * suspend where the system can (CLOCK_BOOTTIME).
 */

/** leader → helper: JSON {ms}: the lease deadline from now (null: none, e.g. no longer a fleet runner). */
export const T_DEADLINE = 5;
/** helper → leader: JSON {killed}: the deadline passed; every tree was killed. */
export const T_FENCED = 16;

let deadlineAt: number | null = null;
let sink: ((ms: number | null) => void) | null = null;
const listeners = new Set<(killed: number) => void>();

/** Set (epoch ms) or clear the moment this runner's workers must be dead by; passed to the helper at once. */
export function setLeaseDeadline(at: number | null): void {
  deadlineAt = at;
  sink?.(at === null ? null : at - Date.now());
}

/** The helper's end of it (spawner.ts): told the current deadline now and every change after; null detaches. */
export function attachDeadlineSink(fn: ((ms: number | null) => void) | null): void {
  sink = fn;
  if (fn && deadlineAt !== null) fn(deadlineAt - Date.now());
}

/** Called when the helper fenced this runner (its deadline passed); returns an unsubscribe. */
export function onSelfFence(fn: (killed: number) => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** The helper said it fenced this runner. */
export function selfFenced(killed: number): void {
  deadlineAt = null;
  for (const fn of listeners) fn(killed);
}

/**
 * How long before its lease's expiry a runner's deadline falls: room for the kill (a SIGKILL, milliseconds)
 * and for the hosts' clock error; no more, since a runner whose renewal is merely late is fenced too.
 */
export function fenceMarginMs(ttlMs: number): number {
  return Math.min(1000, Math.max(100, Math.floor(ttlMs / 10)));
}
