import { z } from 'zod';
import type { Config } from '../core/config.js';
import { AppError } from '../core/errors.js';
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
  /** What each task of the tree may spend (over config [budgets]; an agent may only lower those). */
  max_tokens: z.number().int().min(1).optional(),
  max_cost_usd: z.number().positive().optional(),
  max_turns: z.number().int().min(1).max(10_000).optional(),
  max_wall_s: z.number().int().min(1).max(30 * 86_400).optional(),
  /** What the whole tree may spend, its tasks' usage summed (over config [budgets] root_*). */
  root_max_tokens: z.number().int().min(1).optional(),
  root_max_cost_usd: z.number().positive().optional(),
  root_max_turns: z.number().int().min(1).max(100_000).optional(),
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

/** The spending limits a task runs under, each enforced while it runs (runner/spend-guard.ts). */
export const GUARD_FIELDS = ['max_tokens', 'max_cost_usd', 'max_turns', 'max_wall_s'] as const;
export type TaskGuardField = (typeof GUARD_FIELDS)[number];
/** The same, summed over every task of a tree (a tree's total; wall time stays per task). */
export const ROOT_GUARD_FIELDS = ['root_max_tokens', 'root_max_cost_usd', 'root_max_turns'] as const;
export type RootGuardField = (typeof ROOT_GUARD_FIELDS)[number];
export type GuardField = TaskGuardField | RootGuardField;
export type GuardLimits = Partial<Record<TaskGuardField, number>>;
export type RootLimits = Partial<Record<RootGuardField, number>>;

export function isRootField(f: string): f is RootGuardField {
  return (ROOT_GUARD_FIELDS as readonly string[]).includes(f);
}

/** Per task: limits a person raised (answering a budget request) and the worker turns it has taken. */
interface TaskGuard {
  raised?: GuardLimits;
  turns?: number;
}
const TASK_GUARD_PREFIX = 'task_guard.';

function guardOf(db: Db, taskId: string): TaskGuard {
  return getSetting<TaskGuard>(db, TASK_GUARD_PREFIX + taskId) ?? {};
}

/** Only the guard fields of a budget object. */
export function guardFieldsOf(b: Partial<Record<string, unknown>> | null | undefined): GuardLimits {
  const out: GuardLimits = {};
  for (const f of GUARD_FIELDS) if (typeof b?.[f] === 'number') out[f] = b[f];
  return out;
}

/** Only the tree-total fields of a budget object. */
export function rootFieldsOf(b: Partial<Record<string, unknown>> | null | undefined): RootLimits {
  const out: RootLimits = {};
  for (const f of ROOT_GUARD_FIELDS) if (typeof b?.[f] === 'number') out[f] = b[f];
  return out;
}

/** The tree totals in effect for a root: config [budgets] root_*, then its tree's budget (raised there by a person's answer). */
export function rootLimitsOf(db: Db, config: Config, rootId: string): RootLimits {
  return { ...rootFieldsOf(config.budgets), ...rootFieldsOf(getRootBudget(db, rootId)) };
}

/** Raise (or set) one of a tree's totals, as a person answering a budget request of one of its tasks decided. */
export function raiseRootLimit(db: Db, rootId: string, field: RootGuardField, value: number): void {
  setRootBudget(db, rootId, { ...getRootBudget(db, rootId), [field]: value });
}

/**
 * A tree total a run crossed, kept with the tree's budget: a task of the tree that starts later, while the
 * limit is not raised above it, stops before its worker does (the run that crossed it ended at the total
 * or one step short, so the store alone may read just under it).
 */
export function markRootReached(db: Db, rootId: string, c: BudgetCrossing): void {
  setSetting(db, ROOT_BUDGET_PREFIX + rootId, { ...getRootBudget(db, rootId), reached: { field: c.field, limit: c.limit, spent: c.spent } });
}

/** The crossing recorded for the tree, while its limit has not been raised past it since; else null. */
export function rootReached(db: Db, config: Config, rootId: string): BudgetCrossing | null {
  const r = (getRootBudget(db, rootId) as { reached?: BudgetCrossing } | null)?.reached;
  if (!r || !isRootField(r.field)) return null;
  const now = rootLimitsOf(db, config, rootId)[r.field];
  return now !== undefined && now <= r.limit ? { ...r, limit: now } : null;
}

/** The limits in effect for a task: config [budgets], then its tree's budget, then what a person raised. */
export function guardLimitsOf(db: Db, config: Config, taskId: string, rootId: string): GuardLimits {
  return { ...guardFieldsOf(config.budgets), ...guardFieldsOf(getRootBudget(db, rootId)), ...guardFieldsOf(guardOf(db, taskId).raised) };
}

/** Worker turns the task has taken over all its attempts. */
export function turnsOf(db: Db, taskId: string): number {
  return guardOf(db, taskId).turns ?? 0;
}

/** Count one more worker turn (in the caller's transaction). */
export function countTurn(db: Db, taskId: string): void {
  const g = guardOf(db, taskId);
  setSetting(db, TASK_GUARD_PREFIX + taskId, { ...g, turns: (g.turns ?? 0) + 1 });
}

/** Raise (or set) one of the task's limits, as a person answering its budget request decided. */
export function raiseLimit(db: Db, taskId: string, field: TaskGuardField, value: number): void {
  const g = guardOf(db, taskId);
  setSetting(db, TASK_GUARD_PREFIX + taskId, { ...g, raised: { ...g.raised, [field]: value } });
}

/**
 * An agent (an MCP host, a worker) may lower a configured limit, never raise one above it: `where` names
 * the input (e.g. `tasks[0].budget`), and the error the field.
 */
export function checkCeiling(config: Config, asked: GuardLimits & RootLimits, where: string): void {
  const ceiling: GuardLimits & RootLimits = { ...guardFieldsOf(config.budgets), ...rootFieldsOf(config.budgets) };
  for (const f of [...GUARD_FIELDS, ...ROOT_GUARD_FIELDS]) {
    const want = asked[f];
    const max = ceiling[f];
    if (want !== undefined && max !== undefined && want > max) {
      throw new AppError('forbidden', `${where}.${f}: ${want} is above the ceiling of ${max} the person set in config.toml [budgets]; an MCP host or a worker may only lower it`, { field: `${where}.${f}` });
    }
  }
}

/** A budget a task reached while it ran: which, its limit and what was spent. */
export interface BudgetCrossing {
  field: GuardField;
  limit: number;
  spent: number;
  /** When the run was stopped (ms). */
  at?: number;
}

const UNITS: Record<GuardField, string> = { max_tokens: 'tokens', max_cost_usd: 'USD', max_turns: 'turns', max_wall_s: 's', root_max_tokens: 'tokens', root_max_cost_usd: 'USD', root_max_turns: 'turns' };

/** `12,034 of 10,000 tokens`, `0.52 of 0.50 USD`. */
export function describeSpend(field: GuardField, spent: number, limit: number): string {
  const n = (v: number) => (field === 'max_cost_usd' || field === 'root_max_cost_usd' ? v.toFixed(4) : Math.round(v).toLocaleString('en-US'));
  return `${n(spent)} of ${n(limit)} ${UNITS[field]}`;
}

/** The words a budget request asks with (and a budget_exceeded error ends with). */
export function budgetQuestion(c: BudgetCrossing): string {
  return `budget of ${c.field} reached: ${describeSpend(c.field, c.spent, c.limit)} spent${isRootField(c.field) ? ' by the task tree' : ''}; raise it or stop`;
}
