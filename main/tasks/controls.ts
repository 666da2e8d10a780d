import type { Config } from '../core/config.js';
import { AppError } from '../core/errors.js';
import { redactText } from '../core/redact.js';
import { appendEvent } from '../store/events.js';
import type { Db } from '../store/db.js';
import { pendingRequestOf, shiftExpiry } from '../store/requests.js';
import { requireTask } from '../store/tasks.js';
import { lastSessionOf, startNewAttempt } from './ops.js';
import { resealObjective } from './secrets.js';
import { transition } from './state.js';
import type { Task, TaskStatus } from './types.js';
import { latestPause, redirectSeqs } from '../store/task-history.js';
import { setObjective } from '../store/task-moves.js';

/** States a task can be paused in (the console offers Pause only there). */
export const PAUSABLE: readonly TaskStatus[] = ['queued', 'waiting_input'];

/**
 * Pause a queued task (the scheduler does not claim it) or a task waiting for an answer (its request's
 * expiry stops counting). `resumeTask` puts it back where it was.
 */
export function pauseTask(db: Db, id: string, by: string): Task {
  const t = requireTask(db, id);
  if (!PAUSABLE.includes(t.status)) {
    throw new AppError('illegal_transition', `task ${id} is ${t.status}; only a queued task or one waiting for an answer can be paused`, { status: t.status });
  }
  return transition(db, id, t.status, 'paused', { reason: `paused by ${by}`, event: { pausedFrom: t.status, by } });
}

export const RESUMABLE: readonly TaskStatus[] = ['paused'];

/** Resume a paused task: back to queued, or to waiting_input with its request's expiry moved by the pause. */
export function resumeTask(db: Db, id: string, by: string): Task {
  const t = requireTask(db, id);
  if (!RESUMABLE.includes(t.status)) throw new AppError('illegal_transition', `task ${id} is ${t.status}; only a paused task can be resumed`, { status: t.status });
  const pause = latestPause(db, id);
  const row = pause ? { f: pause.from as TaskStatus | null, ts: pause.ts } : undefined;
  const pending = pendingRequestOf(db, id);
  const to: TaskStatus = row?.f === 'waiting_input' && pending ? 'waiting_input' : 'queued';
  if (to === 'waiting_input' && row) shiftExpiry(db, pending!.id, Math.max(0, Date.now() - row.ts));
  return transition(db, id, 'paused', to, { reason: `resumed by ${by}`, event: { by } });
}

export const REJECTABLE: readonly TaskStatus[] = ['completed'];

/** Reject a completed task's change: `rejected` (dependents blocked); its worktree stays until prune. */
export function rejectTask(db: Db, id: string, by: string, reason?: string): Task {
  const t = requireTask(db, id);
  if (!REJECTABLE.includes(t.status)) throw new AppError('illegal_transition', `task ${id} is ${t.status}; only a completed task can be rejected`, { status: t.status });
  const why = redactText(reason ? `rejected by ${by}: ${reason}` : `rejected by ${by}`);
  return transition(db, id, 'completed', 'rejected', { reason: why, fields: { errorCode: 'rejected', errorMessage: why } });
}

export const REVERIFIABLE: readonly TaskStatus[] = ['completed', 'failed', 'rejected'];

/**
 * Run the task's verification again, without a worker turn: a new attempt (same worktree) that goes
 * starting → verifying → completed or failed. The previous result is kept when it passes.
 */
export function reverifyTask(db: Db, _config: Config, id: string, by: string): Task {
  const t = requireTask(db, id);
  if (!REVERIFIABLE.includes(t.status)) throw new AppError('illegal_transition', `task ${id} is ${t.status}; verification reruns on a completed, failed or rejected task`, { status: t.status });
  if (t.verify.length === 0) throw new AppError('invalid_input', `id: task ${id} has no verify commands to rerun`, { field: 'id' });
  if (t.kind === 'execute' && !t.worktreePath) throw new AppError('invalid_input', `id: task ${id} never had a worktree to verify`, { field: 'id' });
  return startNewAttempt(db, t, {
    strategy: 'reverify',
    reason: `reverify by ${by}`,
    resume: { sessionId: lastSessionOf(db, t), fromAttempt: t.attempt, interruptedBy: 'reverify', worktree: t.worktreePath, reverify: true },
    // No worker turn: only the verify commands the task was created (and approved) with run again.
    authority: 'engine',
    fields: { result: t.result, schemaValid: t.schemaValid },
  });
}

export const REDIRECTABLE: readonly TaskStatus[] = ['awaiting_approval', 'queued', 'starting', 'running', 'verifying', 'waiting_input', 'paused'];

/**
 * Replace the objective of a task that has not ended. A running task's worker gets it at its next turn
 * (the runner sends it into the same session when the current turn ends); a task not yet running gets
 * it in its next prompt. Stored redacted; the worker gets the original.
 */
export function redirectTask(db: Db, id: string, objective: string, by: string): Task {
  const text = objective.trim();
  if (!text) throw new AppError('invalid_input', 'objective: the new objective is empty', { field: 'objective' });
  const t = requireTask(db, id);
  if (!REDIRECTABLE.includes(t.status)) throw new AppError('illegal_transition', `task ${id} is ${t.status}; only a task that has not ended can be redirected`, { status: t.status });
  const stored = resealObjective(db, t, text);
  setObjective(db, id, stored, Date.now());
  appendEvent(db, id, 'task.redirected', { by, objective: stored.slice(0, 2000), status: t.status });
  return requireTask(db, id);
}

/**
 * True (and marked seen) when the task was redirected since its running session last saw the
 * objective; the caller reads the new objective with unsealTask. Runs in the caller's transaction.
 */
export function takeRedirect(db: Db, taskId: string): boolean {
  const r = pendingRedirect(db, taskId);
  if (r === null) return false;
  appendEvent(db, taskId, 'task.redirect_applied', { redirect: r });
  return true;
}

/**
 * The seq of a redirect the task's session has not seen yet, else null. A plain read: the runner asks
 * at every turn and takes the write lock (takeRedirect) only when there is one.
 */
export function pendingRedirect(db: Db, taskId: string): number | null {
  const { redirected, applied } = redirectSeqs(db, taskId);
  return !redirected || (applied !== null && applied > redirected) ? null : redirected;
}
