import { AppError } from '../core/errors.js';
import type { EngineHandle } from '../store/engine-handle.js';
import type { EventRow } from '../store/events.js';
import { getTask } from '../store/tasks.js';
import { waitingOn } from '../tasks/ops.js';
import { summarizeTask, type TaskSummary } from '../tasks/summary.js';
import { TERMINAL, type TaskStatus } from '../tasks/types.js';
import { withNeeds } from '../requests/needs.js';
import { nextStep } from './next-step.js';

export interface WaitResult {
  /**
   * settled: every task ended; needs_approval: one waits for a person's approval (or is queued behind
   * one); needs_input: one asks a person a question or a permission (its summary's `needs` says what).
   */
  reason: 'settled' | 'needs_approval' | 'needs_input' | 'timeout' | 'aborted';
  /** How many of the named tasks are in each status. */
  counts: Partial<Record<TaskStatus, number>>;
  /** One summary per id, in the order asked (full records: get_task). */
  tasks: TaskSummary[];
  /** With needs_approval / needs_input: who acts next, and where (next-step.ts). */
  next?: string;
}

function countStatuses(tasks: TaskSummary[]): WaitResult['counts'] {
  const counts: WaitResult['counts'] = {};
  for (const t of tasks) counts[t.status] = (counts[t.status] ?? 0) + 1;
  return counts;
}

function result(engine: EngineHandle, reason: WaitResult['reason'], tasks: TaskSummary[]): WaitResult {
  const next = nextStep(reason, tasks, engine.config);
  return { reason, counts: countStatuses(tasks), tasks, ...(next ? { next } : {}) };
}

function snapshot(engine: EngineHandle, ids: string[]): { done: WaitResult['reason'] | null; tasks: WaitResult['tasks']; anyQueued: boolean } {
  let allEnded = true;
  let needsApproval = false;
  let anyQueued = false;
  let needsInput = false;
  const tasks = ids.map((id) => {
    const t = getTask(engine.db, id);
    if (!t) throw new AppError('not_found', `task ${id} not found`, { field: 'ids', id });
    const ended = TERMINAL.has(t.status);
    if (!ended) allEnded = false;
    let w: string[] | undefined;
    if (t.status === 'awaiting_approval') needsApproval = true;
    else if (t.status === 'queued') {
      anyQueued = true;
      w = waitingOn(engine.db, t.id);
      if (w.length) needsApproval = true;
    } else if (t.status === 'waiting_input') {
      needsInput = true;
      return withNeeds(engine, summarizeTask(t, w));
    }
    return summarizeTask(t, w);
  });
  return { done: allEnded ? 'settled' : needsInput ? 'needs_input' : needsApproval ? 'needs_approval' : null, tasks, anyQueued };
}

/**
 * Resolve as soon as every named task has ended, or one of them needs a person (awaiting approval,
 * queued behind a dependency that awaits approval, or waiting for an answer) — never hang on a person. Sees other processes'
 * changes through the engine's data_version watch. `timeoutMs` bounds the wait. `onSnapshot` sees the
 * tasks' summaries at the start and after every change (a face's progress line).
 */
export function waitTasks(engine: EngineHandle, ids: string[], timeoutMs: number, signal?: AbortSignal, onSnapshot?: (tasks: TaskSummary[]) => void): Promise<WaitResult> {
  const first = snapshot(engine, ids);
  onSnapshot?.(first.tasks);
  if (first.done) return Promise.resolve(result(engine, first.done, first.tasks));
  engine.watch();
  return new Promise((resolve) => {
    const finish = (reason: WaitResult['reason']) => {
      clearTimeout(timer);
      engine.events.off('change', check);
      engine.events.off('event', note);
      signal?.removeEventListener('abort', onAbort);
      let tasks: WaitResult['tasks'] = [];
      try {
        tasks = snapshot(engine, ids).tasks;
      } catch {
        // a database closed under us: report what we have
      }
      resolve(result(engine, reason, tasks));
    };
    // Look again only after events that can change the answer: one of the named tasks', or, while one of
    // them is queued, any task starting to await approval (it may be a dependency it then waits on).
    // Re-reading every named task after every write of a busy leader cost more than the leader's own work.
    const named = new Set(ids);
    let anyQueued = first.anyQueued;
    let dirty = false;
    const note = (e: EventRow) => {
      if (e.taskId !== null && named.has(e.taskId)) dirty = true;
      else if (anyQueued && e.type === 'task.status' && e.payload.to === 'awaiting_approval') dirty = true;
    };
    const check = () => {
      if (!dirty) return;
      dirty = false;
      const s = snapshot(engine, ids);
      anyQueued = s.anyQueued;
      onSnapshot?.(s.tasks);
      if (s.done) finish(s.done);
    };
    const onAbort = () => finish('aborted');
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    engine.events.on('event', note);
    engine.events.on('change', check);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
