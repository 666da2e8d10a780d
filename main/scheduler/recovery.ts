import type { Engine } from '../engine.js';
import { killTree } from '../runner/process.js';
import { transition } from '../tasks/state.js';
import type { Task } from '../tasks/types.js';
import { getTask } from '../store/tasks.js';

/**
 * On takeover: every task some other runner owned (starting, running, verifying) lost its runner.
 * Kill its surviving process tree — only when PID and start time still match, so a recycled PID is
 * never touched — then mark it orphaned. Nothing is re-run; a retry is an explicit new attempt.
 * Returns the ids it orphaned.
 */
export async function recoverOrphans(engine: Engine, holder: string, graceMs: number): Promise<string[]> {
  const rows = engine.db
    .prepare(`SELECT id FROM tasks WHERE status IN ('starting', 'running', 'verifying') AND (runner_id IS NULL OR runner_id != ?)`)
    .all(holder) as { id: string }[];
  const orphaned: string[] = [];
  for (const { id } of rows) {
    const t = getTask(engine.db, id);
    if (!t) continue;
    let killed = false;
    if (t.pid && t.pid > 0) killed = await killTree(t.pid, t.pidStart, graceMs);
    try {
      engine.write(() => {
        transition(engine.db, id, t.status as Task['status'], 'orphaned', {
          reason: `runner ${t.runnerId ?? '?'} was lost`,
          fields: { errorCode: 'orphaned', errorMessage: `the runner of this task died; ${killed ? 'its process tree was killed' : 'no live process was found'}` },
          event: { killedPid: killed ? t.pid : null },
        });
        engine.db.prepare(`UPDATE attempts SET status = 'orphaned', ended_at = ? WHERE task_id = ? AND attempt = ?`).run(Date.now(), id, t.attempt);
      });
      orphaned.push(id);
    } catch {
      // It moved meanwhile (its runner finished it); nothing to recover.
    }
  }
  return orphaned;
}
