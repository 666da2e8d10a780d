import type { EngineContext } from '../tasks/engine-context.js';
import { appendEvent } from '../store/events.js';
import { closeAttempt } from '../store/attempts.js';
import { getTask } from '../store/tasks.js';
import { openBudgetRequest } from '../requests/budget-request.js';
import { budgetQuestion, isRootField, markRootReached, type BudgetCrossing } from '../tasks/budget.js';
import { transition } from '../tasks/state.js';
import type { Task, TaskStatus } from '../tasks/types.js';
import type { Spend } from './spend-guard.js';
import type { Fence } from '../store/fence.js';

/**
 * A run its spend guard stopped (its tree already swept): the task waits in `waiting_input` with a budget
 * request (raise it or stop), or, with config [budgets] on_exceeded = "fail", ends `failed` with
 * `budget_exceeded`. Returns the status it ends in (null when someone else moved it first). `fence`: the
 * attempt and runner that ran it (a runner that lost the task changes nothing).
 */
export function stopForBudget(engine: EngineContext, task: Task, crossing: BudgetCrossing, spent: Spend, fence?: Fence): TaskStatus | null {
  return engine.write(() => {
    const cur = getTask(engine.db, task.id);
    if (!cur || !['starting', 'running', 'verifying'].includes(cur.status)) return null;
    const now = Date.now();
    appendEvent(engine.db, task.id, 'task.budget_reached', { attempt: task.attempt, ...crossing, spent: { ...spent } }, now);
    if (isRootField(crossing.field)) markRootReached(engine.db, task.rootId, crossing);
    const question = budgetQuestion(crossing);
    if (engine.config.budgets.on_exceeded === 'fail') {
      const message = `${question.replace('; raise it or stop', '')} (config.toml [budgets] on_exceeded = "fail"); its process tree was stopped`;
      transition(engine.db, task.id, cur.status, 'failed', { reason: message, fields: { errorCode: 'budget_exceeded', errorMessage: message, pid: null }, fence });
      closeAttempt(engine.db, task.id, task.attempt, 'failed', now, 'budget_exceeded');
      return 'failed';
    }
    const req = openBudgetRequest(engine.db, engine.config, cur, crossing);
    transition(engine.db, task.id, cur.status, 'waiting_input', { reason: question, fields: { pid: null, pidStart: null }, event: { requestId: req.id, kind: req.kind }, fence });
    closeAttempt(engine.db, task.id, task.attempt, 'waiting_input', now);
    return 'waiting_input';
  });
}
