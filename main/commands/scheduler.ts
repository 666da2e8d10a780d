import { z } from 'zod';
import { waitTasks } from '../scheduler/wait.js';
import { currentLease } from '../scheduler/lease.js';
import { PAUSE_PREFIX, type WorkerPause } from '../scheduler/scheduler.js';
import { countByStatus } from '../store/tasks.js';
import { getSetting, settingsWithPrefix } from '../store/settings.js';
import { TASK_ID } from '../tasks/schema.js';
import { defineCommand } from './table.js';

export const waitTasksCommand = defineCommand({
  name: 'wait_tasks',
  description: 'Block (≤55 s) until the named tasks all end or one needs approval.',
  input: z.strictObject({
    ids: z.array(TASK_ID).min(1).max(100),
    timeout_s: z.number().min(0).max(55).default(55),
  }),
  readOnly: true,
  async handler(ctx, input) {
    return waitTasks(ctx.engine, input.ids, input.timeout_s * 1000, ctx.signal);
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
