/**
 * A claim found its task's row, or the free limit slots, held by another runner's claim this instant
 * (store/pg/fleet-slots.ts). That claim commits (and its commit wakes us) or lets go without a commit (a
 * claimer that died mid-claim, which wakes nobody): so look again by ourselves, soon, backing off with
 * jitter while it keeps happening, and from the shortest wait again once a claim succeeds.
 */
const MIN_MS = 10;
const MAX_MS = 2000;

export class ClaimBackoff {
  private timer: NodeJS.Timeout | null = null;
  private waitMs = MIN_MS;

  constructor(private readonly wake: () => void) {}

  /** Wake once after the current wait (no-op while one is pending). */
  soon(): void {
    if (this.timer) return;
    const wait = this.waitMs + Math.floor(Math.random() * this.waitMs);
    this.waitMs = Math.min(MAX_MS, this.waitMs * 2);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.wake();
    }, wait);
    this.timer.unref();
  }

  /** A claim succeeded: the next contention waits the shortest time again. */
  reset(): void {
    this.waitMs = MIN_MS;
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
