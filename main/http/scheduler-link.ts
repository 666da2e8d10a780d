import type { Engine } from '../engine.js';

/** What serve and the desktop app need from the scheduler (main/scheduler/service.ts). */
export interface SchedulerStatus {
  role: 'leader' | 'standby';
  paused: boolean;
  running: number;
  awaitingApproval: number;
  queued: number;
}

export interface SchedulerHandle {
  stop(): Promise<void>;
  pause(): void;
  resume(): void;
  status(): SchedulerStatus;
  on(event: 'status', fn: (s: SchedulerStatus) => void): unknown;
}

type StartFn = (engine: Engine, opts?: { paused?: boolean }) => Promise<SchedulerHandle>;

/**
 * Start the scheduler service on `engine` — the one place serve and the desktop app call it.
 * Loaded lazily so the console still opens (read-only, nothing runs) in a checkout where the
 * scheduler is missing; that case is reported through `onMissing`.
 */
export async function startScheduler(engine: Engine, opts: { paused?: boolean; onMissing?: (why: string) => void } = {}): Promise<SchedulerHandle | null> {
  const modulePath = '../scheduler/service.js';
  let start: StartFn | undefined;
  try {
    start = ((await import(modulePath)) as { startSchedulerService?: StartFn }).startSchedulerService;
  } catch (err) {
    opts.onMissing?.(`scheduler service not available: ${(err as Error).message}`);
    return null;
  }
  if (!start) {
    opts.onMissing?.('scheduler service not available: main/scheduler/service.ts exports no startSchedulerService');
    return null;
  }
  return await start(engine, { paused: opts.paused });
}
