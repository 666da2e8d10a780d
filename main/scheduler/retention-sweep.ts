import { parseAge } from '../core/age.js';
import { collectGarbage, type GcReport } from '../isolation/gc.js';
import { appendEvent } from '../store/events.js';
import type { EngineContext } from '../tasks/engine-context.js';

const lastRun = new WeakMap<EngineContext, number>();
const inFlight = new WeakMap<EngineContext, Promise<GcReport>>();

/**
 * The leader's retention pass (`[retention]` in config.toml): when enabled and `interval_s` has passed
 * since the last pass, gc deletes up to `max_trees` trees that ended longer than `older_than` ago, as
 * `lightworker gc --apply` would (never one holding unaccepted work: no force here). Off the beat: the
 * git and file work never holds a heartbeat. A pass that deleted something records `retention.swept`.
 * Returns the pass under way, or null when none started (disabled, too soon, or one still running).
 */
export function sweepRetention(engine: EngineContext, now = Date.now()): Promise<GcReport> | null {
  const r = engine.config.retention;
  if (!r.enabled || inFlight.has(engine)) return null;
  const last = lastRun.get(engine);
  // The first pass waits one interval after a leader starts, so a restart loop never runs gc each time.
  if (last === undefined) lastRun.set(engine, now);
  if (last === undefined || now - last < r.interval_s * 1000) return null;
  lastRun.set(engine, now);
  const run = (async () => {
    const report = await collectGarbage(engine, { olderThanMs: parseAge(r.older_than, 'retention.older_than'), olderThan: r.older_than.trim(), apply: true, force: false, limit: r.max_trees, now });
    if (report.totals.trees && engine.db.open) {
      engine.write(() => appendEvent(engine.db, null, 'retention.swept', { ...report.totals, olderThan: report.olderThan, durationMs: report.durationMs }));
    }
    return report;
  })().finally(() => inFlight.delete(engine));
  inFlight.set(engine, run);
  return run;
}

/** The pass under way for `engine`, if any (tests and shutdown wait for it). */
export function retentionSweepInFlight(engine: EngineContext): Promise<GcReport> | null {
  return inFlight.get(engine) ?? null;
}
