import type { Config } from '../core/config.js';
import type { Db } from '../store/db.js';
import { rootBudgetWaits } from '../store/requests.js';
import type { Task } from '../tasks/types.js';
import { gatewayKey, workerWaitReason } from './worker-pauses.js';
import { memoryWaitReason } from './memory-admission.js';

/** A queued task of a tree whose total is reached: which task waits for a person, and how to answer it. */
export function rootWaitReason(db: Db, rootId: string): string | null {
  const w = rootBudgetWaits(db).find((x) => x.rootId === rootId);
  if (!w) return null;
  return `${w.question.replace('; raise it or stop', '')}; no task of the tree starts until a person raises it (lightworker answer ${w.taskId} --allow <new limit>) or stops it (--deny)`;
}

/** Why a runnable queued task does not start now (on one host), or null: its tree's total, its worker's pause, its gateway's, memory. */
export function queuedWaitReason(db: Db, config: Config, t: Pick<Task, 'rootId' | 'worker' | 'gateway'>): string | null {
  return (
    rootWaitReason(db, t.rootId) ??
    workerWaitReason(db, config, t.worker) ??
    (t.gateway ? workerWaitReason(db, config, gatewayKey(t.gateway)) : null) ??
    memoryWaitReason(db, t.worker)
  );
}
