import { AppError } from '../core/errors.js';

/** Most auto-repair turns one task may ask for (`metadata.auto_repair`), as `[verify] auto_repair` allows. */
export const MAX_AUTO_REPAIR = 5;

/** `metadata.auto_repair`, when given, is the task's own number of repair turns: an integer 0 (none) to 5. */
export function checkAutoRepair(metadata: Record<string, unknown> | undefined, field: string): void {
  const v = metadata?.auto_repair;
  if (v === undefined) return;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > MAX_AUTO_REPAIR) {
    throw new AppError('invalid_input', `${field}.auto_repair: an integer from 0 (no repair turn) to ${MAX_AUTO_REPAIR}, not ${JSON.stringify(v)}`, { field: `${field}.auto_repair` });
  }
}

/** Repair turns a task's verification failure may get: its own `metadata.auto_repair`, else `[verify] auto_repair`. */
export function autoRepairsOf(task: { metadata: Record<string, unknown> }, config: { verify: { auto_repair: number } }): number {
  const own = task.metadata.auto_repair;
  return typeof own === 'number' && Number.isInteger(own) && own >= 0 ? Math.min(own, MAX_AUTO_REPAIR) : config.verify.auto_repair;
}
