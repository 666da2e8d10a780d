import type { EventEmitter } from 'node:events';
import type { Lease } from '../store/leases.js';
import type { RunningTask, Scheduler } from './scheduler.js';

// The scheduler service's face (service.ts runs it): what run, serve, the desktop app and the library see.

export interface SchedulerStatus {
  role: 'leader' | 'standby';
  paused: boolean;
  running: number;
  awaitingApproval: number;
  /** Tasks waiting for a person's answer (a question or a permission request). */
  waitingInput: number;
  queued: number;
  leader: Pick<Lease, 'holder' | 'pid' | 'hostname'> | null;
}

export interface SchedulerService extends EventEmitter {
  readonly holder: string;
  /** The dispatcher, while this process leads. */
  readonly scheduler: Scheduler | null;
  status(): SchedulerStatus;
  pause(): void;
  resume(): void;
  /** The tasks this process runs now (empty while standing by). */
  runningTasks(): RunningTask[];
  /**
   * Begin a graceful shutdown: claim nothing new (the lease is kept, so no standby claims either),
   * let running tasks finish. Emits 'drained' once nothing runs here (at once if nothing does).
   */
  drain(): void;
  /**
   * Give up leadership; running tasks are killed and recorded as cancelled by a shutdown (resumable).
   * `killNow` sends SIGKILL at once instead of SIGTERM + kill grace. Calling again returns the same promise.
   */
  stop(opts?: { killNow?: boolean }): Promise<void>;
}

export interface ServiceOptions {
  /** How often a standby tries to take over, in ms. */
  standbyPollMs?: number;
  /** Start with dispatch paused (the desktop app's "paused" state survives restarts through settings too). */
  paused?: boolean;
  /**
   * Never lead in this process: when nobody leads and there is work, call this to start a detached
   * background runner instead (a short-lived MCP session must not take running tasks down with it).
   */
  spawnRunner?: () => void;
  /** Take the lead only while there is work (`run --until-idle`: a standby that would just exit). */
  onlyWithWork?: boolean;
}
