import { fenceMarginMs, onSelfFence, setLeaseDeadline, type FenceReport } from '../platform/proc/self-fence.js';
import type { Db } from '../store/db.js';
import { renewRunner } from './fleet.js';

/**
 * A fleet runner's self-fence (platform/proc/self-fence.ts): after each renewal that landed, its workers
 * must be dead by the renewal's start + lease - margin, the moment before any other runner can find the
 * lease expired; renewals are due every ttl/4, so a runner is fenced only when about three in a row did not
 * land in time. `onFenced` hears when the deadline passed (the trees are killed already, or, with no spawner
 * helper, must be killed by the caller: `killed` null).
 */
export class RunnerFence {
  private off: (() => void) | null;

  constructor(
    private readonly ttlMs: number,
    onFenced: (report: FenceReport, message: string) => void,
  ) {
    this.off = onSelfFence((r) => onFenced(r, describeFence(r)));
  }

  /** A renewal (or the registration) that began at `since` (epoch ms, the time it wrote as its own) landed. */
  renewed(since: number): void {
    if (this.off) setLeaseDeadline(since + this.ttlMs - fenceMarginMs(this.ttlMs));
  }

  /**
   * The renewal inside one of the runner's own write transactions, once one is due (ttl/4 since `lastAt`):
   * a runner busy with claims and task ends, its event loop rarely free for the beat's timer, still renews.
   * Returns what to do once that transaction committed (only then is the fence moved, and `onRenewed` told).
   */
  renewInWrite(db: Db, holder: string, lastAt: number, onRenewed: (at: number) => void): (() => void) | void {
    const now = Date.now();
    if (now - lastAt < Math.max(100, Math.floor(this.ttlMs / 4)) || !renewRunner(db, holder, this.ttlMs, now)) return;
    return () => {
      onRenewed(now);
      this.renewed(now);
    };
  }

  /** No lease to guard any more (lost, or stopped and released). */
  clear(): void {
    setLeaseDeadline(null);
  }

  close(): void {
    this.off?.();
    this.off = null;
    setLeaseDeadline(null);
  }
}

function describeFence(r: FenceReport): string {
  const what = r.killed === null ? 'its worker processes are killed' : `its ${r.killed} worker process(es) were killed`;
  return `this runner could not renew its lease in time; ${what} before the lease could expire (${r.lateMs} ms after the deadline), and it joins the fleet again`;
}
