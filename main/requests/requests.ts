import type { Config } from '../core/config.js';
import { taskCachelab } from '../cachelab/task-cachelab.js';
import { AppError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { redactText } from '../core/redact.js';
import { appendEvent } from '../store/events.js';
import type { Db } from '../store/db.js';
import { closeRequest, expiredRequests, getRequest, insertRequest, pendingRequestOf, type TaskRequest } from '../store/requests.js';
import { requireTask } from '../store/tasks.js';
import { continueTask } from '../tasks/followup.js';
import { resumeRequestOf } from '../tasks/ops.js';
import { transition } from '../tasks/state.js';
import { ACTIVE, type Task } from '../tasks/types.js';
import type { AskInput } from '../tasks/contract/escalation.js';

const cut = (s: string | null | undefined, n: number) => (s === null || s === undefined ? null : redactText(s).slice(0, n));

function rowOf(t: Task, ask: AskInput, now: number, expirySeconds: number) {
  return {
    id: newId(now), taskId: t.id, attempt: t.attempt, kind: ask.kind, worker: t.worker, sessionId: ask.sessionId ?? t.sessionId,
    question: cut(ask.question, 4000) || '(no text)', tool: cut(ask.tool, 200), command: cut(ask.command, 4000), scope: cut(ask.scope, 500),
    reason: cut(ask.reason, 2000), options: (ask.options ?? []).slice(0, 8).map((o) => redactText(o).slice(0, 200)),
    createdAt: now, expiresAt: now + expirySeconds * 1000,
  };
}

/**
 * Record a request for a person (status pending, with its expiry from config [requests] expiry_s) and a
 * `request.created` event. The task's state is the runner's to change when the turn ends (enterWaiting).
 * Text is stored redacted. Runs in the caller's transaction.
 */
export function openRequest(db: Db, config: Config, t: Task, ask: AskInput, now = Date.now()): TaskRequest {
  const row = rowOf(t, ask, now, config.requests.expiry_s);
  insertRequest(db, row);
  appendEvent(db, t.id, 'request.created', { requestId: row.id, kind: row.kind, question: row.question, tool: row.tool, command: row.command, scope: row.scope, options: row.options, expiresAt: row.expiresAt }, now);
  return getRequest(db, row.id)!;
}

/** Record a request the policy denied at once (nobody is asked), with a `request.denied` event. */
export function recordDenied(db: Db, t: Task, ask: AskInput, why: string, now = Date.now()): TaskRequest {
  const row = rowOf(t, ask, now, 0);
  insertRequest(db, { ...row, status: 'answered', decision: 'deny', answer: redactText(why), answeredBy: 'policy', answeredAt: now });
  appendEvent(db, t.id, 'request.denied', { requestId: row.id, kind: row.kind, tool: row.tool, command: row.command, by: 'policy', reason: why }, now);
  return getRequest(db, row.id)!;
}

/** running → waiting_input once the turn that asked has ended. */
export function enterWaiting(db: Db, taskId: string, req: TaskRequest): Task {
  return transition(db, taskId, 'running', 'waiting_input', {
    reason: `waiting for a person: ${req.kind === 'permission' ? `permission for ${req.tool ?? 'a tool'}${req.command ? `: ${req.command}` : ''}` : req.question}`.slice(0, 300),
    fields: { pid: null, pidStart: null },
    event: { requestId: req.id, kind: req.kind },
  });
}

export interface AnswerInput {
  /** The answer to a question, or a note with a permission decision. */
  text?: string;
  decision?: 'allow' | 'deny';
  /** With allow: the same tool and command are allowed for the rest of the task. */
  remember?: boolean;
  by: string;
}

/**
 * Answer the pending request of a waiting task and continue it: a new attempt whose first turn tells the
 * worker's own session the answer (a granted permission is allowed when the worker asks again). A
 * question needs `text`; a permission needs `decision`. The time the run spent before it asked is
 * carried over, so the task's timeout pauses while it waits. Runs in the caller's transaction.
 */
export function answerRequest(db: Db, config: Config, taskId: string, a: AnswerInput): { task: Task; request: TaskRequest } {
  const t = requireTask(db, taskId);
  const req = pendingRequestOf(db, taskId);
  if (t.status !== 'waiting_input' || !req) {
    const hint = t.status === 'paused' && req ? ' (resume it first: lightworker resume)' : '; it has no question or permission request waiting for an answer';
    throw new AppError('illegal_transition', `task ${taskId} is ${t.status}${hint}`, { status: t.status });
  }
  const text = a.text?.trim() ?? '';
  if (req.kind === 'question') {
    if (a.decision) throw new AppError('invalid_input', 'decision: --allow / --deny answer permission requests; this is a question: answer it with text', { field: 'decision' });
    if (!text) throw new AppError('invalid_input', 'text: the answer to a question is empty', { field: 'text' });
  } else if (!a.decision) {
    throw new AppError('invalid_input', 'decision: a permission request is answered with --allow or --deny', { field: 'decision' });
  }
  if (a.remember && a.decision !== 'allow') throw new AppError('invalid_input', 'remember: only an allowed permission can be remembered', { field: 'remember' });
  const now = Date.now();
  const decision = req.kind === 'question' ? 'answer' : a.decision!;
  closeRequest(db, req.id, 'answered', { decision, answer: text ? redactText(text) : null, remember: a.remember, answeredBy: a.by, at: now });
  appendEvent(db, taskId, 'request.answered', { requestId: req.id, kind: req.kind, decision, by: a.by, remember: Boolean(a.remember), ...(text ? { answer: redactText(text).slice(0, 2000) } : {}) }, now);
  const before = resumeRequestOf(db, t)?.followUp?.spentMs ?? 0;
  const spentMs = before + Math.max(0, req.createdAt - (t.startedAt ?? req.createdAt));
  // An answer continues the run that was already approved; it releases no new write.
  const task = continueTask(db, config, t, { message: answerMessage(req, decision, text), by: a.by, strategy: 'answer', spentMs, authority: 'engine', cachelab: taskCachelab });
  return { task, request: getRequest(db, req.id)! };
}

/** The user message of the turn after an answer. */
function answerMessage(req: TaskRequest, decision: 'allow' | 'deny' | 'answer', text: string): string {
  if (req.kind === 'question') return `You asked: ${req.question}\n\nA person answered:\n${text}\n\nContinue the task with this answer.`;
  const what = `${req.tool ?? 'the tool'}${req.command ? ` \`${req.command}\`` : ''}`;
  const note = text ? `\nTheir note: ${text}` : '';
  return decision === 'allow'
    ? `A person allowed your request to use ${what}.${note}\nDo it now (it is permitted) and continue the task.`
    : `A person denied your request to use ${what}.${note}\nDo not try it again. Continue without it, or finish and say in your result what is missing.`;
}

/**
 * End every waiting task whose request expired: the request becomes `expired` and the task `failed`
 * with error `request_expired` (its dependents are blocked). Paused tasks are skipped (their clock
 * stops). Returns the ids of the tasks ended. Runs in the caller's transaction.
 */
export function expireRequests(db: Db, now = Date.now()): string[] {
  const ended: string[] = [];
  for (const req of expiredRequests(db, now)) {
    const t = requireTask(db, req.taskId);
    if (t.status !== 'waiting_input') {
      // Paused: its clock stopped. Still in the turn that asked: the runner moves it to waiting_input next.
      if (t.status !== 'paused' && !ACTIVE.has(t.status)) closeRequest(db, req.id, 'cancelled', { answer: `task is ${t.status}`, at: now });
      continue;
    }
    closeRequest(db, req.id, 'expired', { at: now });
    const waited = Math.round((now - req.createdAt) / 1000);
    const message = `the ${req.kind === 'permission' ? 'permission request' : 'question'} "${req.kind === 'permission' ? `${req.tool ?? ''} ${req.command ?? ''}`.trim() : req.question}" expired after ${waited} s without an answer (config.toml [requests] expiry_s); answer sooner, or send a follow-up with \`lightworker followup ${t.id} "…"\``;
    appendEvent(db, t.id, 'request.expired', { requestId: req.id, kind: req.kind, waitedS: waited }, now);
    transition(db, t.id, 'waiting_input', 'failed', { reason: message.slice(0, 300), fields: { errorCode: 'request_expired', errorMessage: redactText(message) } });
    ended.push(t.id);
  }
  return ended;
}
