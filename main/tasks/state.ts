import { AppError } from '../core/errors.js';
import { redactText } from '../core/redact.js';
import { appendEvent } from '../store/events.js';
import type { Db } from '../store/db.js';
import type { Fence } from '../store/fence.js';
import { dependentsOf, requireTask, type TaskFieldUpdate } from '../store/tasks.js';
import { FAILED_ENDS, TERMINAL, type Task, type TaskStatus } from './types.js';
import { deleteSetting } from '../store/settings.js';
import { blockWaitingTask, compareAndSetStatus, tasksBlockedBy } from '../store/task-moves.js';

export type { Fence };

/** The legal edges of the task lifecycle (docs/architecture.md draws it). Anything else is an illegal transition. */
export const TRANSITIONS: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  awaiting_approval: ['queued', 'cancelled', 'blocked'],
  queued: ['starting', 'cancelled', 'blocked', 'awaiting_approval', 'paused'],
  // starting → verifying: `reverify` runs verification only, without a worker turn.
  // starting/running → queued: a rate limit puts the same attempt back in the queue until the provider's reset.
  // → waiting_input from any of the three: a budget was reached (a person raises it or stops the task).
  starting: ['running', 'verifying', 'failed', 'timed_out', 'cancelled', 'orphaned', 'queued', 'waiting_input'],
  // running → waiting_input: the turn ended with a question or permission request for a person.
  running: ['verifying', 'waiting_input', 'failed', 'timed_out', 'cancelled', 'orphaned', 'queued'],
  // verifying → running: an auto-repair follow-up turn goes back to the worker's session.
  verifying: ['completed', 'running', 'failed', 'timed_out', 'cancelled', 'orphaned', 'waiting_input'],
  // completed → queued/awaiting_approval: a follow-up (tasks/followup.ts) is a new attempt of a finished task.
  completed: ['accepted', 'queued', 'awaiting_approval', 'rejected'],
  accepted: [],
  // Retry or follow-up: an ended task becomes a new attempt (queued, or awaiting approval again).
  failed: ['queued', 'awaiting_approval'],
  timed_out: ['queued', 'awaiting_approval'],
  cancelled: ['queued', 'awaiting_approval'],
  orphaned: ['queued', 'awaiting_approval'],
  // A blocked task is released when the dependency that blocked it is retried.
  blocked: ['queued', 'awaiting_approval', 'cancelled'],
  // Answered (a new attempt in the same session), expired (failed), cancelled, or paused by a person.
  waiting_input: ['queued', 'awaiting_approval', 'failed', 'cancelled', 'paused'],
  // Resumed to where it was paused from.
  paused: ['queued', 'waiting_input', 'cancelled'],
  // A rejected change can still get a follow-up (new attempt, same worktree).
  rejected: ['queued', 'awaiting_approval'],
};

export function canTransition(from: TaskStatus, to: TaskStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

export interface TransitionOptions {
  /** Recorded in the task.status event. */
  reason?: string;
  /** Other columns to set in the same UPDATE. */
  fields?: TaskFieldUpdate;
  /** Extra payload for the event. */
  event?: Record<string, unknown>;
  /**
   * The runner's fencing token: the move applies only while the task is still this attempt of this
   * runner. A runner that lost its lease (frozen, cut off) and wakes after the task was orphaned and
   * retried elsewhere can then never end, or move, the newer attempt.
   */
  fence?: Fence;
}

/**
 * Compare-and-set one task from `from` (or any of several) to `to`, with an event, in the caller's
 * transaction. Throws `illegal_transition` when the edge is not legal, and `conflict` when the task
 * is no longer in the expected state (someone else moved it first). When `to` is a failed end, every
 * transitive dependent that has not started is blocked in the same transaction.
 */
export function transition(db: Db, id: string, from: TaskStatus | readonly TaskStatus[], to: TaskStatus, opts: TransitionOptions = {}): Task {
  move(db, id, from, to, opts);
  return requireTask(db, id);
}

/** {@link transition} for a caller that needs nothing back (the runner's hot path: no full task read). */
export function move(db: Db, id: string, from: TaskStatus | readonly TaskStatus[], to: TaskStatus, opts: TransitionOptions = {}): void {
  const froms = (Array.isArray(from) ? from : [from]) as TaskStatus[];
  for (const f of froms) {
    if (!canTransition(f, to)) throw new AppError('illegal_transition', `task ${id}: cannot go from ${f} to ${to}`, { from: f, to });
  }
  const now = Date.now();
  const fields: TaskFieldUpdate = { ...opts.fields };
  if (FAILED_ENDS.has(to) || to === 'completed' || to === 'accepted') fields.endedAt ??= now;
  const fence = opts.fence;
  if (!compareAndSetStatus(db, id, froms, to, fields, now, fence)) {
    // The caller's view was stale: someone else moved the task first (or, fenced, it is another attempt now).
    const current = requireTask(db, id);
    if (fence && (current.attempt !== fence.attempt || current.runnerId !== fence.runnerId)) {
      throw new AppError('conflict', `task ${id}: attempt ${fence.attempt} of runner ${fence.runnerId} is no longer current (attempt ${current.attempt} of runner ${current.runnerId ?? 'none'} is)`, {
        status: current.status,
        fenced: true,
      });
    }
    throw new AppError('conflict', `task ${id} is ${current.status}, expected ${froms.join(' or ')}`, { status: current.status, expected: froms });
  }
  appendEvent(db, id, 'task.status', { from: froms.length === 1 ? froms[0] : froms, to, ...(opts.reason ? { reason: opts.reason } : {}), ...opts.event }, now);
  if (FAILED_ENDS.has(to)) blockDependents(db, id, to, opts.reason);
  // A host pin (an execute task resumed where its worktree is, tasks/auto-resume.ts) holds for that run
  // only: once it ended, a later attempt goes wherever the claim rules send it (a resume pins it again).
  if (TERMINAL.has(to)) deleteSetting(db, `run_host.${id}`);
}

/**
 * Fail closed: every transitive dependent still waiting (awaiting_approval or queued) becomes blocked,
 * with the task that caused it recorded. Runs in the caller's transaction.
 */
export function blockDependents(db: Db, causeId: string, causeStatus: TaskStatus, reason?: string): string[] {
  const blocked: string[] = [];
  const stack = [causeId];
  const seen = new Set<string>([causeId]);
  const now = Date.now();
  while (stack.length) {
    const cur = stack.pop()!;
    for (const dep of dependentsOf(db, cur)) {
      if (seen.has(dep)) continue;
      seen.add(dep);
      const message = redactText(`dependency ${cur} ended ${cur === causeId ? causeStatus : 'blocked'}${reason && cur === causeId ? `: ${reason}` : ''}`);
      if (blockWaitingTask(db, dep, cur, message, now)) {
        appendEvent(db, dep, 'task.status', { from: 'waiting', to: 'blocked', reason: message, blockedBy: cur, rootCause: causeId }, now);
        blocked.push(dep);
        stack.push(dep);
      }
    }
  }
  return blocked;
}

/**
 * Undo fail-closed blocking after `causeId` is retried: dependents blocked by it (transitively) go back
 * to queued, or to awaiting_approval when they were never approved and their mode requires it.
 */
export function releaseDependents(db: Db, causeId: string, needsApproval: (t: Task) => boolean): string[] {
  const released: string[] = [];
  const stack = [causeId];
  while (stack.length) {
    const cur = stack.pop()!;
    for (const id of tasksBlockedBy(db, cur)) {
      const t = requireTask(db, id);
      const to: TaskStatus = t.approvedAt === null && needsApproval(t) ? 'awaiting_approval' : 'queued';
      transition(db, id, 'blocked', to, {
        reason: `dependency ${cur} was retried`,
        fields: { blockedBy: null, errorCode: null, errorMessage: null, endedAt: null },
      });
      released.push(id);
      stack.push(id);
    }
  }
  return released;
}
