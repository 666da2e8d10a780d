import type { Config } from '../core/config.js';
import { attemptsWallMs } from '../store/attempts.js';
import type { Db } from '../store/db.js';
import { GUARD_FIELDS, guardLimitsOf, ROOT_GUARD_FIELDS, rootLimitsOf, turnsOf, type GuardLimits, type RootLimits, type TaskGuardField } from './budget.js';
import { costOfRootExcept, costOfTask, effectivePrices } from './cost.js';
import { taskIdsOfTree } from '../store/tasks.js';
import type { Task } from './types.js';

/** What a task has spent over all its attempts, in the units of its budgets. */
export interface Spend {
  tokens: number;
  usd: number;
  turns: number;
  /** Seconds its attempts ran (a wait for a person excluded); the running attempt up to `now`. */
  wallS: number;
}

/** The spend recorded so far: usage events × the price table, turns counted, attempts' run time. */
export function spendOf(db: Db, config: Config, task: Pick<Task, 'id' | 'status' | 'startedAt'>, now = Date.now()): Spend {
  const cost = costOfTask(db, effectivePrices(config), task.id);
  const tokens = cost.models.reduce((n, m) => n + m.inputTokens + m.outputTokens, 0);
  const running = ['starting', 'running', 'verifying'].includes(task.status) && task.startedAt ? now - task.startedAt : 0;
  return { tokens, usd: cost.usd ?? cost.reportedUsd ?? 0, turns: turnsOf(db, task.id), wallS: (attemptsWallMs(db, task.id) + running) / 1000 };
}

const SPENT_OF: Record<TaskGuardField, keyof Spend> = { max_tokens: 'tokens', max_cost_usd: 'usd', max_turns: 'turns', max_wall_s: 'wallS' };

/** What a whole tree has spent as stored (a running attempt's usage as far as it is written). */
export function treeSpendOf(db: Db, config: Config, rootId: string): Omit<Spend, 'wallS'> {
  const cost = costOfRootExcept(db, effectivePrices(config), rootId, new Set());
  const ids = taskIdsOfTree(db, rootId);
  return { tokens: cost.models.reduce((n, m) => n + m.inputTokens + m.outputTokens, 0), usd: cost.usd ?? cost.reportedUsd ?? 0, turns: ids.reduce((n, id) => n + turnsOf(db, id), 0) };
}

export interface BudgetView {
  limits: GuardLimits;
  spent: Spend;
  onExceeded: 'ask' | 'fail';
  /** The tree's totals, when it has any: its tasks' spend summed. */
  root?: { id: string; limits: RootLimits; spent: Omit<Spend, 'wallS'> };
}

/** `get_task`/`show`: each budget in effect with what was spent of it, and the spend itself (and the tree's). */
export function budgetView(db: Db, config: Config, task: Task): BudgetView {
  const view: BudgetView = { limits: guardLimitsOf(db, config, task.id, task.rootId), spent: spendOf(db, config, task), onExceeded: config.budgets.on_exceeded };
  const rootLimits = rootLimitsOf(db, config, task.rootId);
  if (Object.keys(rootLimits).length) view.root = { id: task.rootId, limits: rootLimits, spent: treeSpendOf(db, config, task.rootId) };
  return view;
}

/** `tree tokens 31,000/40,000 · tree turns 2`: a tree's totals against its limits. */
export function formatRootBudget(r: NonNullable<BudgetView['root']>): string {
  const keys = { root_max_tokens: 'tokens', root_max_cost_usd: 'usd', root_max_turns: 'turns' } as const;
  return ROOT_GUARD_FIELDS.map((f) => {
    const spent = r.spent[keys[f]];
    const limit = r.limits[f];
    const n = (x: number) => (f === 'root_max_cost_usd' ? `$${x.toFixed(4)}` : Math.round(x).toLocaleString('en-US'));
    return `${keys[f] === 'usd' ? 'cost' : keys[f]} ${n(spent)}${limit !== undefined ? `/${n(limit)}` : ''}`;
  }).join(' · ');
}

/** One line: `tokens 12,034/10,000 · turns 3/5 · wall 41 s`. */
export function formatBudget(v: { limits: GuardLimits; spent: Spend }): string {
  return GUARD_FIELDS.map((f) => {
    const spent = v.spent[SPENT_OF[f]];
    const limit = v.limits[f];
    const n = (x: number) => (f === 'max_cost_usd' ? `$${x.toFixed(4)}` : Math.round(x).toLocaleString('en-US'));
    return `${SPENT_OF[f] === 'wallS' ? 'wall s' : SPENT_OF[f] === 'usd' ? 'cost' : SPENT_OF[f]} ${n(spent)}${limit !== undefined ? `/${n(limit)}` : ''}`;
  }).join(' · ');
}
