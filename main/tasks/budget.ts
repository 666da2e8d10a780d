import { z } from 'zod';
import type { Config } from '../core/config.js';
import type { Db } from '../store/db.js';
import { getSetting, setSetting } from '../store/settings.js';

/**
 * Per-root budgets, set by the call that creates a task tree (`submit --max-*`, `orchestrate`):
 * how many of its tasks run at once (else scheduler.per_root), how many attempts one task may make,
 * and how many retries the whole tree may spend (else limits.retry_budget). Kept in settings under
 * `root_budget.<root id>`, so the scheduler's claim query can read it without another table.
 */
export const rootBudgetSchema = z.strictObject({
  concurrency: z.number().int().min(1).max(256).optional(),
  attempts: z.number().int().min(1).max(50).optional(),
  retries: z.number().int().min(0).max(100).optional(),
});
export type RootBudget = z.infer<typeof rootBudgetSchema>;

export const ROOT_BUDGET_PREFIX = 'root_budget.';

export function getRootBudget(db: Db, rootId: string): RootBudget | null {
  return getSetting<RootBudget>(db, ROOT_BUDGET_PREFIX + rootId);
}

export function setRootBudget(db: Db, rootId: string, budget: RootBudget): void {
  setSetting(db, ROOT_BUDGET_PREFIX + rootId, budget);
}

/** The tree's effective limits: its own budget over the config defaults. */
export function effectiveBudget(db: Db, config: Config, rootId: string): { concurrency: number; attempts: number | null; retries: number } {
  const b = getRootBudget(db, rootId) ?? {};
  return { concurrency: b.concurrency ?? config.scheduler.per_root, attempts: b.attempts ?? null, retries: b.retries ?? config.limits.retry_budget };
}
