import type { TaskErrorCode } from '../core/errors.js';
import type { TaskStatus } from '../tasks/types.js';
import type { InfraBlame } from './infra-failure.js';

// How a run ends early: the error runTask throws to its end, and what each abort reason records.

const ABORT_STATUS: Record<string, TaskStatus> = { timeout: 'timed_out', cancel: 'cancelled', shutdown: 'cancelled', leader_lost: 'orphaned' };

export class StopTask extends Error {
  /** `infra`: the worker itself failed (its circuit breaker counts it), 'gateway': through its gateway's fault (that one's too). */
  constructor(readonly status: TaskStatus, readonly code: TaskErrorCode, message: string, readonly infra: InfraBlame = false) {
    super(message);
  }
}

const ABORT_MESSAGE: Record<string, string> = {
  timeout: 'the task hit its timeout; its process tree was killed',
  cancel: 'cancelled on request; its process tree was killed',
  shutdown: 'stopped by a shutdown of the LightWorker process that ran it; its process tree was killed. Continue it with `lightworker retry <id> --strategy resume`',
  leader_lost: 'its runner lost the scheduler lease; its process tree was killed',
};
/** The error code a stop records: a shutdown has its own, so a resume can tell it from a person's cancel. */
const ABORT_CODE: Record<string, TaskErrorCode> = { timeout: 'timed_out', cancel: 'cancelled', shutdown: 'shutdown', leader_lost: 'orphaned' };

export function abortError(reason: string): StopTask {
  const status = ABORT_STATUS[reason] ?? 'cancelled';
  return new StopTask(status, ABORT_CODE[reason] ?? 'cancelled', ABORT_MESSAGE[reason] ?? `stopped: ${reason}`);
}

