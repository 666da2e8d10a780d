import { z } from 'zod';
import { answerRequest } from '../requests/requests.js';
import { answerBudgetRequest } from '../requests/budget-request.js';
import { listRequests, pendingRequestOf } from '../store/requests.js';
import { requireTask } from '../store/tasks.js';
import { TASK_ID, noNul } from '../tasks/schema.js';
import { authorityOf, defineCommand, FACE_LABELS, requirePersonOrAllowed } from './table.js';

export const answerTaskCommand = defineCommand({
  name: 'answer_task',
  description: 'Answer a waiting task: text, or allow/deny (budget: allow raises it; text: new limit).',
  input: z.strictObject({
    id: TASK_ID,
    text: noNul(z.string().min(1).max(32_768)).optional(),
    decision: z.enum(['allow', 'deny']).optional(),
    remember: z.boolean().optional(),
  }),
  readOnly: false,
  handler(ctx, input) {
    const pending = pendingRequestOf(ctx.engine.db, input.id);
    // A grant widens what a worker may do: like approvals, only a person gives it unless allowed.
    if (pending?.kind === 'permission' && input.decision === 'allow') requirePersonOrAllowed(ctx, 'granting a permission');
    // A budget: raised (within the configured ceiling when an agent answers) or stopped.
    if (pending?.kind === 'budget') {
      return ctx.engine.write(() => answerBudgetRequest(ctx.engine.db, ctx.engine.config, input.id, { text: input.text ?? '', decision: input.decision, by: FACE_LABELS[ctx.face], authority: authorityOf(ctx) }));
    }
    return ctx.engine.write(() => answerRequest(ctx.engine.db, ctx.engine.config, input.id, { text: input.text, decision: input.decision, remember: input.remember, by: FACE_LABELS[ctx.face] }));
  },
});

export const listRequestsCommand = defineCommand({
  name: 'list_requests',
  description: 'Questions and permission requests of tasks, newest first (default: pending).',
  input: z.strictObject({
    status: z.array(z.enum(['pending', 'answered', 'expired', 'cancelled'])).max(4).default(['pending']),
    task_id: TASK_ID.optional(),
    limit: z.number().int().min(1).max(1000).default(100),
  }),
  readOnly: true,
  handler(ctx, input) {
    if (input.task_id) requireTask(ctx.engine.db, input.task_id);
    const requests = listRequests(ctx.engine.db, { status: input.status, taskId: input.task_id, limit: input.limit });
    return {
      requests: requests.map((r) => {
        const t = requireTask(ctx.engine.db, r.taskId);
        return { ...r, task: { id: t.id, name: t.name, status: t.status, kind: t.kind, worker: t.worker, objective: t.objective.slice(0, 2000), worktreePath: t.worktreePath, branch: t.branch, sessionId: t.sessionId } };
      }),
    };
  },
});

export const REQUEST_COMMANDS = [answerTaskCommand, listRequestsCommand];
