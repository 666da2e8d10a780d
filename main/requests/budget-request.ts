import type { Config } from '../core/config.js';
import { taskCachelab } from '../cachelab/task-cachelab.js';
import { AppError } from '../core/errors.js';
import { redactText } from '../core/redact.js';
import { appendEvent } from '../store/events.js';
import type { Db } from '../store/db.js';
import { closeRequest, getRequest, pendingRequestOf, pendingTreeBudgetRequests, type TaskRequest } from '../store/requests.js';
import { requireTask } from '../store/tasks.js';
import { resumeRequestOf } from '../tasks/ops.js';
import { budgetQuestion, checkCeiling, getRootBudget, type RootBudget, GUARD_FIELDS, isRootField, raiseLimit, raiseRootLimit, ROOT_GUARD_FIELDS, type BudgetCrossing, type GuardField } from '../tasks/budget.js';
import { continueTask } from '../tasks/followup.js';
import { transition } from '../tasks/state.js';
import type { Authority, Task } from '../tasks/types.js';
import { openRequest } from './requests.js';

/**
 * A task that reached a budget while it ran: a `budget` request for a person (raise it: `allow`, with the
 * new limit as text or else one more budget's worth; stop: `deny`). Runs in the caller's transaction.
 */
export function openBudgetRequest(db: Db, config: Config, t: Task, c: BudgetCrossing): TaskRequest {
  return openRequest(db, config, t, { kind: 'budget', question: budgetQuestion(c), scope: c.field, reason: JSON.stringify({ limit: c.limit, spent: c.spent }), options: ['raise', 'stop'] });
}

/** The crossing a budget request records. */
function crossingOf(req: TaskRequest): BudgetCrossing {
  const field = [...GUARD_FIELDS, ...ROOT_GUARD_FIELDS].find((f) => f === req.scope) ?? 'max_tokens';
  const r = JSON.parse(req.reason ?? '{}') as { limit?: number; spent?: number };
  return { field, limit: Number(r.limit) || 0, spent: Number(r.spent) || 0 };
}

/** The new limit an answer names (`500000`, `max_tokens=500000`, `$2.50`), or null when it names none. */
function limitIn(field: GuardField, text: string): number | null {
  const m = /(\d+(?:\.\d+)?)/.exec(text.replace(/[_,]/g, ''));
  if (!m) return null;
  const v = Number(m[1]);
  return field === 'max_cost_usd' || field === 'root_max_cost_usd' ? v : Math.round(v);
}

export interface BudgetAnswer {
  text: string;
  decision?: 'allow' | 'deny';
  by: string;
  authority: Authority;
}

/**
 * Answer a budget request: `allow` raises the limit (to the number in `text`, else by one more budget's
 * worth past what was spent) and continues the task in its session as a new attempt; `deny` ends it
 * `failed` with `budget_exceeded`. An agent may raise only up to config [budgets]' ceiling. A tree's total
 * (`root_*`) raised continues every task of the tree stopped by it, not only the one answered.
 */
export function answerBudgetRequest(db: Db, config: Config, taskId: string, a: BudgetAnswer): { task: Task; request: TaskRequest } {
  const t = requireTask(db, taskId);
  const req = pendingRequestOf(db, taskId);
  if (t.status !== 'waiting_input' || req?.kind !== 'budget') throw new AppError('illegal_transition', `task ${taskId} is ${t.status}; it has no budget request waiting for an answer`, { status: t.status });
  const task = answerCrossing(db, config, t, req, a);
  if (isRootField(req.scope ?? '') && task.status !== 'failed') {
    const text = String(getRootLimit(db, t.rootId, req.scope!));
    for (const s of siblingsStoppedBy(db, t.rootId, req.scope!, t.id)) {
      try {
        answerCrossing(db, config, requireTask(db, s.taskId), getRequest(db, s.requestId)!, { ...a, decision: 'allow', text });
      } catch (err) {
        // One that crossed later, past the new limit (refused before anything is written): it keeps its own request.
        if (!(err instanceof AppError)) throw err;
      }
    }
  }
  return { task, request: getRequest(db, req.id)! };
}

/** Other tasks of the tree waiting on a budget request for the same tree total. */
function siblingsStoppedBy(db: Db, rootId: string, field: string, except: string): { taskId: string; requestId: string }[] {
  return pendingTreeBudgetRequests(db, rootId, field, except);
}

function getRootLimit(db: Db, rootId: string, field: string): number {
  return Number(getRootBudget(db, rootId)?.[field as keyof RootBudget]);
}

function answerCrossing(db: Db, config: Config, t: Task, req: TaskRequest, a: BudgetAnswer): Task {
  const c = crossingOf(req);
  const decision = a.decision ?? (/^\s*stop\b/i.test(a.text) ? 'deny' : /^\s*raise\b/i.test(a.text) || limitIn(c.field, a.text) !== null ? 'allow' : undefined);
  if (!decision) throw new AppError('invalid_input', `decision: a budget request is answered with --allow [new limit] (raise it) or --deny (stop the task)`, { field: 'decision' });
  const now = Date.now();
  if (decision === 'deny') {
    closeRequest(db, req.id, 'answered', { decision: 'deny', answer: a.text ? redactText(a.text) : null, answeredBy: a.by, at: now });
    appendEvent(db, t.id, 'request.answered', { requestId: req.id, kind: req.kind, decision: 'deny', by: a.by, remember: false }, now);
    const message = `${budgetQuestion(c).replace('; raise it or stop', '')}; stopped by ${a.by}`;
    return transition(db, t.id, 'waiting_input', 'failed', { reason: message, fields: { errorCode: 'budget_exceeded', errorMessage: message } });
  }
  const limit = limitIn(c.field, a.text) ?? c.spent + c.limit;
  if (limit <= c.spent) {
    throw new AppError('invalid_input', `text: ${c.field} ${limit} is not above what the ${isRootField(c.field) ? 'task tree' : 'task'} already spent (${c.spent}); name a higher limit`, { field: 'text' });
  }
  if (a.authority === 'agent') checkCeiling(config, { [c.field]: limit }, 'budget');
  if (isRootField(c.field)) raiseRootLimit(db, t.rootId, c.field, limit);
  else raiseLimit(db, t.id, c.field, limit);
  closeRequest(db, req.id, 'answered', { decision: 'allow', answer: String(limit), answeredBy: a.by, at: now });
  appendEvent(db, t.id, 'request.answered', { requestId: req.id, kind: req.kind, decision: 'allow', by: a.by, remember: false, answer: `${c.field} = ${limit}` }, now);
  const message = `LightWorker stopped you because the ${isRootField(c.field) ? "task's tree" : 'task'} reached its ${c.field} budget; ${a.by} raised it to ${limit}. Continue the task where you stopped, and finish with the result contract.`;
  // The run's timeout keeps counting from where it stopped, as after any answer.
  const spentMs = (resumeRequestOf(db, t)?.followUp?.spentMs ?? 0) + Math.max(0, req.createdAt - (t.startedAt ?? req.createdAt));
  return continueTask(db, config, t, { message, by: a.by, strategy: 'answer', spentMs, authority: 'engine', cachelab: taskCachelab });
}
