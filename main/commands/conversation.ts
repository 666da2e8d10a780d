import { z } from 'zod';
import { followUpTask, FOLLOW_UP_MAX_CHARS } from '../tasks/followup.js';
import { TASK_ID, noNul } from '../tasks/schema.js';
import { allWorkerNames } from '../workers/registry.js';
import { AppError } from '../core/errors.js';
import { defineCommand, FACE_LABELS } from './table.js';

/** Talking to a task after it started (issue 15): follow-ups and the controls around a run. */
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
    const task = ctx.engine.write(() => followUpTask(ctx.engine.db, ctx.engine.config, input.id, { message: input.message, worker: input.worker, by: FACE_LABELS[ctx.face] }));
    return { task };
  },
});

export const CONVERSATION_COMMANDS = [followUpCommand];
