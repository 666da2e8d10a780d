import { hostname } from 'node:os';
import { join } from 'node:path';
import type { StoreWriter } from '../store/engine-handle.js';
import { removeStagedCredentials } from '../workers/credentials.js';
import { sweepTrees, taskTree } from '../platform/proc/sweep.js';
import { transition } from '../tasks/state.js';
import type { Task } from '../tasks/types.js';
import { getTask } from '../store/tasks.js';
import { resumeOrphanOrSay } from '../tasks/auto-resume.js';
import { closeAttempt, inFlightTasksNotOf, inFlightTasksOf } from '../store/attempts.js';
import { strandedOwners } from '../store/task-owners.js';
import { lostTasksOnHost, reapExpiredRunners } from './fleet.js';

/**
 * On takeover: every task some other runner owned (starting, running, verifying) lost its runner.
 * Sweep what is left of its processes — the recorded worker or verify process group (even when that
 * leader already died: its group and its re-parented descendants may live on) and, on Linux, every
 * process carrying the task attempt's marker — then mark it orphaned. A recycled PID is never touched
 * (PID + start time; see sweepTrees). All trees are swept together, so one grace covers them all.
 * Where it is safe (tasks/auto-resume.ts) and `scheduler.auto_resume_orphans` is on, each is resumed at once
 * outside the retry budget; otherwise it waits for an explicit retry. Returns the ids it orphaned.
 */
export async function recoverOrphans(engine: StoreWriter, holder: string, graceMs: number, lostRunners?: { id: string; host: string }[], here = hostname()): Promise<string[]> {
  const ids = lostRunners ? inFlightTasksOf(engine.db, lostRunners.map((r) => r.id)) : inFlightTasksNotOf(engine.db, holder);
  const tasks = ids.map((id) => getTask(engine.db, id)).filter((t): t is Task => t !== null);
  // A fleet runner sweeps only trees of runners on its own host: a PID means nothing on another one.
  const remote = new Set((lostRunners ?? []).filter((r) => r.host !== here).map((r) => r.id));
  const local = tasks.filter((t) => !remote.has(t.runnerId ?? ''));
  const trees = local.map((t) => taskTree(engine.home.root, t));
  const swept = await sweepTrees(trees, graceMs);
  const signalled = tasks.map((t) => {
    const i = local.indexOf(t);
    return i < 0 ? 0 : swept[i];
  });
  // The dead runner never released what its turns staged: no login or key may stay in the artifacts.
  for (const t of tasks) removeStagedCredentials(join(engine.home.artifacts, t.id, `attempt-${t.attempt}`));
  const hostOf = new Map((lostRunners ?? []).map((r) => [r.id, r.host]));
  const orphaned: string[] = [];
  tasks.forEach((t, i) => {
    const killed = signalled[i] > 0;
    try {
      engine.write(() => {
        const moved = transition(engine.db, t.id, t.status, 'orphaned', {
          reason: `runner ${t.runnerId ?? '?'} was lost`,
          fields: { errorCode: 'orphaned', errorMessage: `${remote.has(t.runnerId ?? '') ? `the runner of this task (on another host) lost its lease; it kills its own processes when it finds out` : `the runner of this task died; ${killed ? `${signalled[i]} leftover process(es) of it were killed` : 'no live process was found'}`}; \`lightworker retry ${t.id} --strategy resume\` continues it` },
          event: { killedPid: killed ? t.pid : null, killedProcesses: signalled[i], cause: 'runner_lost' },
        });
        closeAttempt(engine.db, t.id, t.attempt, 'orphaned', Date.now());
        // Its runner's loss is no fault of the task: continue it now where that is safe, outside the budget.
        resumeOrphanOrSay(engine.db, engine.config, moved, lostRunners ? (hostOf.get(t.runnerId ?? '') ?? '') : null);
      });
      orphaned.push(t.id);
    } catch {
      // It moved meanwhile (its runner finished it); nothing to recover.
    }
  });
  return orphaned;
}

/**
 * Runners whose lease expired are lost: mark them and orphan their tasks, and the tasks of runners that
 * stopped or were lost without their tasks ending. Process trees are swept only
 * for runners on this host (a PID means nothing on another host; the lost runner's spawner helper killed
 * its trees before the lease expired, platform/proc/self-fence.ts, and the runner sweeps again when it wakes).
 */
export async function recoverLostRunners(engine: StoreWriter, holder: string, host: string): Promise<void> {
  const lost = reapExpiredRunners(engine, host);
  // And tasks still active under a runner that stopped, was lost before, or left no row: nothing else ends them.
  const known = new Set(lost.map((r) => r.id));
  const stranded = strandedOwners(engine.db).filter((r) => !known.has(r.id) && r.id !== holder).map((r) => ({ id: r.id, host: r.host ?? '' }));
  const all = [...lost, ...stranded];
  if (all.length) await recoverOrphans(engine, holder, engine.config.scheduler.kill_grace_ms, all, host);
}

/** What lost runners of this host left running (nobody on another host can kill it). */
export async function sweepLostOnHost(engine: StoreWriter, host: string): Promise<void> {
  const tasks = lostTasksOnHost(engine.db, host);
  if (!tasks.length) return;
  await sweepTrees(tasks.map((t) => taskTree(engine.home.root, t)), engine.config.scheduler.kill_grace_ms);
}
