import { z } from 'zod';
import { taskCachelab } from '../cachelab/task-cachelab.js';
import { followUpTask, FOLLOW_UP_MAX_CHARS } from '../tasks/followup.js';
import { MAX_OBJECTIVE_BYTES, TASK_ID, noNul } from '../tasks/schema.js';
import { pauseTask, redirectTask, rejectTask, resumeTask, reverifyTask } from '../tasks/controls.js';
import { allWorkerNames } from '../workers/registry.js';
import { AppError } from '../core/errors.js';
import { getTask } from '../store/tasks.js';
import { authorityOf, defineCommand, FACE_LABELS, requirePersonOrAllowed } from './table.js';
import { withApproval } from './tasks.js';

/** Talking to a task after it started: follow-ups and the controls around a run. */
export const followUpCommand = defineCommand({
  name: 'followup_task',
  description: "Send a message to an ended task's session (new attempt, same worktree).",
  input: z.strictObject({
    id: TASK_ID,
    message: noNul(z.string().min(1).max(FOLLOW_UP_MAX_CHARS)),
    worker: z.string().min(1).max(64).optional(),
  }),
  readOnly: false,
  handler(ctx, input) {
    if (ctx.depth > ctx.engine.config.limits.max_depth) throw new AppError('forbidden', 'followup_task: delegation depth exceeded');
    if (input.worker !== undefined) {
      const known = allWorkerNames(ctx.engine);
      if (!known.includes(input.worker)) throw new AppError('invalid_input', `worker: unknown worker "${input.worker}" (known: ${known.join(', ')})`, { field: 'worker' });
    }
    const task = ctx.engine.write(() =>
      followUpTask(ctx.engine.db, ctx.engine.config, input.id, { message: input.message, worker: input.worker, by: FACE_LABELS[ctx.face], authority: authorityOf(ctx), cachelab: taskCachelab }),
    );
    return { task, ...withApproval(ctx, [task]) };
  },
});

const idOnly = z.strictObject({ id: TASK_ID });

export const pauseTaskCommand = defineCommand({
  name: 'pause_task',
  description: 'Pause a queued task or one waiting for an answer.',
  input: idOnly,
  readOnly: false,
  handler: (ctx, input) => ({ task: ctx.engine.write(() => pauseTask(ctx.engine.db, input.id, FACE_LABELS[ctx.face])) }),
});

export const resumeTaskCommand = defineCommand({
  name: 'resume_task',
  description: 'Resume a paused task where it was.',
  input: idOnly,
  readOnly: false,
  handler: (ctx, input) => ({ task: ctx.engine.write(() => resumeTask(ctx.engine.db, input.id, FACE_LABELS[ctx.face])) }),
});

export const rejectTaskCommand = defineCommand({
  name: 'reject_task',
  description: "Reject a completed task's change (its worktree stays until prune).",
  input: z.strictObject({ id: TASK_ID, reason: noNul(z.string().max(2000)).optional() }),
  readOnly: false,
  destructive: true,
  handler: (ctx, input) => ({ task: ctx.engine.write(() => rejectTask(ctx.engine.db, input.id, FACE_LABELS[ctx.face], input.reason)) }),
});

export const reverifyTaskCommand = defineCommand({
  name: 'reverify_task',
  description: 'Run verification again only (a new attempt, no worker turn).',
  input: idOnly,
  readOnly: false,
  handler: (ctx, input) => ({ task: ctx.engine.write(() => reverifyTask(ctx.engine.db, ctx.engine.config, input.id, FACE_LABELS[ctx.face])) }),
});

export const redirectTaskCommand = defineCommand({
  name: 'redirect_task',
  description: "Replace a task's objective; a running worker gets it at its next turn.",
  input: z.strictObject({ id: TASK_ID, objective: noNul(z.string().min(1).max(MAX_OBJECTIVE_BYTES)) }),
  readOnly: false,
  handler(ctx, input) {
    // A new objective for a write is a new write: a person approved the old one, not this.
    if (getTask(ctx.engine.db, input.id)?.kind === 'execute') requirePersonOrAllowed(ctx, 'redirecting an execute task');
    return { task: ctx.engine.write(() => redirectTask(ctx.engine.db, input.id, input.objective, FACE_LABELS[ctx.face])) };
  },
});

export const CONVERSATION_COMMANDS = [followUpCommand, pauseTaskCommand, resumeTaskCommand, rejectTaskCommand, reverifyTaskCommand, redirectTaskCommand];
