import type { Engine } from '../engine.js';
import { startSchedulerService, type SchedulerService, type SchedulerStatus } from '../scheduler/service.js';

export type { SchedulerService, SchedulerStatus };

/**
 * Start the scheduler service on `engine`: the one place serve and the desktop app call it. It leads if
 * no other process does, else stands by and takes over when the leader goes away.
 */
export async function startScheduler(engine: Engine, opts: { paused?: boolean } = {}): Promise<SchedulerService> {
  return await startSchedulerService(engine, { paused: opts.paused });
}
