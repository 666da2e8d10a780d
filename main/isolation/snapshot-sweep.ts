import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, sep } from 'node:path';
import type { EngineContext } from '../tasks/engine-context.js';
import { isSameProcess } from '../platform/proc/process.js';
import { getSnapshot, listSnapshots, isSnapshotRecorded } from '../store/snapshots.js';
import { anyTaskIn } from '../store/tasks.js';
import { removeSnapshot, snapshotsRoot } from './snapshot.js';
import { ACTIVE } from '../tasks/types.js';

/** Finding read-only snapshots nobody can be using (prune, takeover); see snapshot.ts. */

export interface SnapshotSweepPlan {
  path: string;
  reason: string;
  run: () => void;
}

/**
 * Snapshots nobody can be using: rows whose owner process died (allocating, or in use by a runner that
 * crashed), free ones unused for `ttlHours` (when given), folders under `<home>/snapshots` no row knows,
 * and stores of repositories with no snapshot left (only with `orphans`). Nothing is removed until `run`.
 */
export function planSnapshotSweep(engine: EngineContext, opts: { ttlHours?: number; now?: number; orphans?: boolean }): SnapshotSweepPlan[] {
  const now = opts.now ?? Date.now();
  const rows = listSnapshots(engine.db, undefined, snapshotsRoot(engine) + sep);
  const plans: SnapshotSweepPlan[] = [];
  for (const r of rows) {
    let reason: string | null = null;
    if (r.state !== 'free' && !isSameProcess(r.ownerPid, r.ownerStart)) reason = `snapshot ${r.state === 'in_use' ? `in use by task ${r.taskId}` : 'being made'} by a process that died (pid ${r.ownerPid})`;
    else if (r.state === 'free' && opts.ttlHours !== undefined && now - r.usedAt > opts.ttlHours * 3_600_000) reason = `free snapshot unused for over ${opts.ttlHours} h`;
    const expect = { state: r.state, usedAt: r.usedAt };
    if (reason)
      plans.push({
        path: r.path,
        reason,
        run: () => {
          // Only if nobody took it meanwhile (prune decided on an earlier read).
          const now = getSnapshot(engine.db, r.id);
          if (now && now.state === expect.state && now.usedAt === expect.usedAt) removeSnapshot(engine, now);
        },
      });
  }
  if (!opts.orphans) return plans;
  const root = snapshotsRoot(engine);
  const known = new Set(rows.map((r) => r.path));
  const gone = new Set(plans.map((p) => p.path));
  const recorded = (p: string) => isSnapshotRecorded(engine.db, p);
  for (const key of existsSync(root) ? readdirSync(root) : []) {
    const dir = join(root, key);
    const entries = safeList(dir);
    for (const e of entries) {
      const p = join(dir, e);
      // The store, its lock and a store being built (snapshot.ts) are not snapshots.
      if (e.startsWith('store.') || known.has(p)) continue;
      plans.push({ path: p, reason: 'orphan snapshot folder (no record)', run: () => void (recorded(p) || rmSync(p, { recursive: true, force: true })) });
    }
    const live = rows.some((r) => r.path.startsWith(dir + sep) && !gone.has(r.path));
    // Custody captures every task's working tree into the store too: it stays while any task runs and
    // for the TTL after its last use.
    if (!live && entries.includes('store.git') && !storeInUse(engine, join(dir, 'store.git'), now, opts.ttlHours ?? 0))
      plans.push({
        path: join(dir, 'store.git'),
        reason: 'snapshot store with no snapshot left',
        run: () => {
          if (!listSnapshots(engine.db, undefined, snapshotsRoot(engine) + sep).some((r) => r.path.startsWith(dir + sep))) rmSync(join(dir, 'store.git'), { recursive: true, force: true });
        },
      });
  }
  return plans;
}

/** Takeover: remove the snapshots of runners that died (their tasks are orphaned; nothing uses them). */
export function sweepDeadSnapshots(engine: EngineContext): number {
  const plans = planSnapshotSweep(engine, {});
  for (const p of plans) p.run();
  return plans.length;
}

function storeInUse(engine: EngineContext, store: string, now: number, ttlHours: number): boolean {
  if (anyTaskIn(engine.db, ACTIVE)) return true;
  try {
    return now - statSync(store).mtimeMs < ttlHours * 3_600_000;
  } catch {
    return false;
  }
}

function safeList(dir: string): string[] {
  try {
    return statSync(dir).isDirectory() ? readdirSync(dir) : [];
  } catch {
    return [];
  }
}
