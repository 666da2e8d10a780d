import type { Config } from '../core/config.js';
import { AppError } from '../core/errors.js';
import { redactText } from '../core/redact.js';
import type { Db } from '../store/db.js';
import { appendEvent } from '../store/events.js';
import { closeRequest, pendingRequestOf } from '../store/requests.js';
import { countTaskStrategyMoves } from '../store/task-history.js';
import { requireTask } from '../store/tasks.js';
import { lastSessionOf, startNewAttempt, type ResumeRequest } from './ops.js';
import { redactAndSeal } from './secrets.js';
import type { Authority, Task, TaskStatus } from './types.js';
import type { TaskCachelab } from './cachelab-hook.js';

/** States a follow-up may continue: ended ones, a rejected change, and a task waiting for a person. */
export const FOLLOWABLE: readonly TaskStatus[] = ['completed', 'failed', 'timed_out', 'cancelled', 'rejected', 'waiting_input'];
export const FOLLOW_UP_MAX_CHARS = 32 * 1024;

/** Key of a follow-up message's sealed original (tasks/secrets.ts), per attempt it starts. */
export function followUpKey(attempt: number): string {
  return `followup-${attempt}`;
}

export interface FollowUpOptions {
  /** The next turn's user message. */
  message: string;
  /** Another worker for the next attempt (handoff); it starts a fresh session with a summary. */
  worker?: string;
  /** Who sent it, for the record ("the CLI", "the console", a team loop…). */
  by: string;
  /** An `agent`'s follow-up to an execute task waits for a person's approval (it writes again). */
  authority: Authority;
  /** A handoff to another worker files the task under that worker's cohort. */
  cachelab: TaskCachelab;
}

/**
 * Send a follow-up to an ended task: a new attempt through the one state machine (completed, failed,
 * timed_out or cancelled → queued, or awaiting_approval when the task was never approved and its mode
 * requires it), in the same worktree and branch for execute tasks. The runner continues the worker's
 * native session with `message` as the next user message when the worker stays the same and a session
 * exists; otherwise (another `worker`, or no session) a fresh session gets the task's prompt plus a short
 * summary of the previous attempt and the message. A follow-up to a completed execute task adds a commit
 * on the task branch. Follow-ups are sent on purpose, so they do not spend the tree's retry budget.
 * Runs in the caller's write transaction; throws `illegal_transition` for other states and
 * `invalid_input` naming the field for a bad message or worker.
 */
export function followUpTask(db: Db, config: Config, id: string, opts: FollowUpOptions): Task {
  const message = opts.message.trim();
  if (!message) throw new AppError('invalid_input', 'message: the follow-up message is empty', { field: 'message' });
  if (message.length > FOLLOW_UP_MAX_CHARS) throw new AppError('invalid_input', `message: at most ${FOLLOW_UP_MAX_CHARS} characters`, { field: 'message' });
  if (opts.worker !== undefined && !opts.worker.trim()) throw new AppError('invalid_input', 'worker: empty worker name', { field: 'worker' });
  const t = requireTask(db, id);
  if (!FOLLOWABLE.includes(t.status)) {
    throw new AppError('illegal_transition', `task ${id} is ${t.status}; a follow-up goes to a ${FOLLOWABLE.join(', ')} task`, { status: t.status });
  }
  if (t.kind === 'plan') throw new AppError('invalid_input', `id: task ${id} is a plan; its children are already expanded — submit a new goal instead`, { field: 'id' });
  const cap = config.limits.maximum_follow_up_turns;
  if (countTaskStrategyMoves(db, t.id, ['followup']) >= cap) {
    throw new AppError('forbidden', `task ${id} has had its ${cap} follow-ups (limits.maximum_follow_up_turns); submit a new task that builds on it`, { field: 'id', limit: cap });
  }
  if (t.status === 'waiting_input') {
    // The message takes the place of the answer: the pending request is closed as superseded.
    const pending = pendingRequestOf(db, t.id);
    if (pending && closeRequest(db, pending.id, 'cancelled', { answer: 'superseded by a follow-up', answeredBy: opts.by, at: Date.now() })) {
      appendEvent(db, t.id, 'request.cancelled', { requestId: pending.id, reason: `superseded by a follow-up from ${opts.by}` });
    }
  }
  return continueTask(db, config, t, { message, worker: opts.worker, by: opts.by, strategy: 'followup', authority: opts.authority, cachelab: opts.cachelab });
}

export interface ContinueOptions {
  message: string;
  worker?: string;
  by: string;
  /** Recorded on the attempt's task.status event: `followup`, `answer`. */
  strategy: string;
  /** Time the earlier attempts of this run already used, for timeouts that pause while a task waits. */
  spentMs?: number;
  authority: Authority;
  cachelab: TaskCachelab;
}

/**
 * The next attempt of `t` whose first turn sends `message` into the previous native session (or a
 * fresh one with a summary when the worker changes or no session exists). Follow-ups and answers share
 * it; callers check the state first. Runs in the caller's transaction.
 */
export function continueTask(db: Db, config: Config, t: Task, opts: ContinueOptions): Task {
  const switching = opts.worker !== undefined && opts.worker !== t.worker;
  const attempt = t.attempt + 1;
  const resume: ResumeRequest = {
    sessionId: switching ? null : lastSessionOf(db, t),
    fromAttempt: t.attempt,
    interruptedBy: opts.strategy,
    worktree: t.kind === 'execute' ? t.worktreePath : null,
    followUp: {
      message: redactAndSeal(db, t.id, followUpKey(attempt), opts.message),
      by: opts.by,
      previous: summarizeAttempt(t),
      ...(switching ? { fromWorker: t.worker } : {}),
      ...(opts.spentMs ? { spentMs: opts.spentMs } : {}),
    },
  };
  // Another worker routes its own model: an explicit model of the previous worker may not fit it.
  const fields = switching ? { worker: opts.worker, model: null } : undefined;
  const reason = `${opts.strategy === 'followup' ? 'follow-up' : opts.strategy} by ${opts.by}${switching ? ` (handed to ${opts.worker})` : ''}`;
  const next = startNewAttempt(db, t, { strategy: opts.strategy, reason, resume, fields, authority: opts.authority });
  if (switching) opts.cachelab.assignCohort(db, config, next);
  return next;
}

/** A few lines about how the previous attempt ended, for a session that did not see it. */
export function summarizeAttempt(t: Task): string {
  const lines = [`Attempt ${t.attempt} by ${t.worker} ended ${t.status}.`];
  const r = t.result as Record<string, unknown> | null;
  if (r && typeof r === 'object') {
    if (typeof r.summary === 'string') lines.push(`Its summary: ${r.summary}`);
    else if (typeof r.text === 'string') lines.push(`Its answer: ${r.text}`);
    if (Array.isArray(r.files_changed) && r.files_changed.length) lines.push(`Files it changed: ${r.files_changed.slice(0, 30).join(', ')}`);
    if (typeof r.notes === 'string' && r.notes) lines.push(`Its notes: ${r.notes}`);
    if (typeof r.verdict === 'string') lines.push(`Its verdict: ${r.verdict}`);
  }
  if (t.error) lines.push(`Error (${t.error.code}): ${t.error.message}`);
  return redactText(lines.join('\n')).slice(0, 2000);
}
