import { z } from 'zod';
import { waitTasks, type WaitResult } from '../scheduler/wait.js';
import { takeWithin } from './answer-budget.js';
import type { TaskSummary } from '../tasks/summary.js';
import { currentLease } from '../store/leases.js';
import { PAUSE_PREFIX, type WorkerPause } from '../scheduler/scheduler.js';
import { countByStatus } from '../store/tasks.js';
import { getSetting, settingsWithPrefix } from '../store/settings.js';
import { TASK_ID } from '../tasks/schema.js';
import { defineCommand } from './table.js';

/**
 * A wait answer an MCP client takes whole: when the summaries are too many, those of tasks that ended
 * well (counts still has them) go first, then the tail; `omitted` says how many are left out.
 */
function fitAnswer(r: WaitResult): WaitResult & { omitted?: number } {
  const same = (t: TaskSummary) => t;
  if (takeWithin(r.tasks, same).length === r.tasks.length) return r;
  const tasks = takeWithin(r.tasks.filter((t) => t.status !== 'completed' && t.status !== 'accepted'), same);
  return { ...r, tasks, omitted: r.tasks.length - tasks.length };
}

/** How many tasks one wait_tasks call may name. */
export const MAX_WAIT_IDS = 500;

export const waitTasksCommand = defineCommand({
  name: 'wait_tasks',
  description: 'Wait up to 55 s until all end or one needs a person.',
  input: z.strictObject({
    ids: z.array(TASK_ID).min(1).max(MAX_WAIT_IDS),
    timeout_s: z.number().min(0).max(55).default(55),
  }),
  readOnly: true,
  async handler(ctx, input): Promise<WaitResult & { omitted?: number }> {
    const r = await waitTasks(ctx.engine, input.ids, input.timeout_s * 1000, ctx.signal);
    return ctx.face === 'mcp' ? fitAnswer(r) : r;
  },
});

export const schedulerStatus = defineCommand({
  name: 'scheduler_status',
  description: 'Who leads this home, whether dispatch is paused, task counts and paused workers.',
  input: z.strictObject({}),
  readOnly: true,
  handler(ctx) {
    const lease = currentLease(ctx.engine.db);
    const live = lease && lease.expiresAt > Date.now();
    return {
      leader: live ? { pid: lease.pid, hostname: lease.hostname, since: lease.acquiredAt, heartbeatAt: lease.heartbeatAt } : null,
      paused: getSetting<boolean>(ctx.engine.db, 'scheduler.paused') ?? false,
      counts: countByStatus(ctx.engine.db),
      pausedWorkers: settingsWithPrefix<WorkerPause>(ctx.engine.db, PAUSE_PREFIX)
        .filter((p) => p.value.until > Date.now())
        .map((p) => ({ worker: p.key.slice(PAUSE_PREFIX.length), until: p.value.until, reason: p.value.reason })),
    };
  },
});

export const SCHEDULER_COMMANDS = [waitTasksCommand, schedulerStatus];
