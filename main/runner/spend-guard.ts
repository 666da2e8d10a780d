import type { Config } from '../core/config.js';
import type { Db } from '../store/db.js';
import { guardLimitsOf, rootReached, type BudgetCrossing, type GuardLimits } from '../tasks/budget.js';
import { spendOf, type Spend } from '../tasks/budget-spend.js';
import { effectivePrices, priceOf, priceTokens, type Price } from '../tasks/cost.js';
import type { Task } from '../tasks/types.js';
import type { NormalizedEvent } from '../workers/adapter.js';
import { checkRoot, meterRun, type MeteredRun } from './root-meter.js';

export type { Spend };

/**
 * The budgets of one run of a task, counted as its worker's events arrive: a usage event that reaches a
 * limit aborts the run's signal with reason `budget` at once (the turn's tree is swept like a cancel), so
 * at most one event's worth is spent past it. Turns are checked before each one starts, wall time by a
 * timer. Its tree's totals (config/`budget` root_*) are summed with the tree's other runs (root-meter.ts):
 * crossing one stops every run of the tree. `crossed` says which budget stopped it.
 */
export class SpendGuard implements MeteredRun {
  readonly #controller = new AbortController();
  readonly #limits: GuardLimits;
  readonly #prices: Record<string, Price>;
  readonly #model: string | null;
  readonly #spent: Spend;
  readonly #startedAt = Date.now();
  readonly #wallBefore: number;
  #timer: NodeJS.Timeout | null = null;
  /** The last usage step (tokens, USD): what the next one is expected to cost. */
  #last = { tokens: 0, usd: 0 };
  crossed: BudgetCrossing | null = null;
  readonly taskId: string;
  readonly #db: Db;
  readonly #config: Config;
  readonly #rootId: string;
  readonly #leaveRoot: () => void;

  constructor(db: Db, config: Config, task: Task) {
    this.#db = db;
    this.#config = config;
    this.taskId = task.id;
    this.#rootId = task.rootId;
    this.#limits = guardLimitsOf(db, config, task.id, task.rootId);
    this.#prices = effectivePrices(config);
    this.#model = task.model;
    // Earlier attempts only: this one is counted live from here.
    this.#spent = spendOf(db, config, { id: task.id, status: 'queued', startedAt: null });
    this.#wallBefore = this.#spent.wallS;
    const wall = this.#limits.max_wall_s;
    if (wall !== undefined) {
      this.#timer = setTimeout(() => this.#cross('max_wall_s', wall, this.spent.wallS), Math.max(0, (wall - this.#wallBefore) * 1000));
      this.#timer.unref();
    }
    this.#leaveRoot = meterRun(db, config, task.rootId, this);
    const reached = rootReached(db, config, task.rootId);
    if (reached) this.#cross(reached.field, reached.limit, reached.spent);
    // A budget already reached (lowered, or spent by earlier attempts or the tree) stops the run before it starts.
    this.#check();
  }

  /** What this task has spent, as its tree's totals count it. */
  get totals(): { tokens: number; usd: number; turns: number } {
    return { tokens: this.#spent.tokens, usd: this.#spent.usd, turns: this.#spent.turns };
  }

  crossRoot(c: BudgetCrossing): void {
    this.#cross(c.field, c.limit, c.spent);
  }

  /** Aborted with reason `budget` once a limit is reached. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get limits(): GuardLimits {
    return this.#limits;
  }

  get spent(): Spend {
    return { ...this.#spent, wallS: this.#wallBefore + (Date.now() - this.#startedAt) / 1000 };
  }

  /** Before a worker turn starts: false (and the signal aborted) when it would cross max_turns. */
  admitTurn(): boolean {
    const max = this.#limits.max_turns;
    if (max !== undefined && this.#spent.turns >= max) this.#cross('max_turns', max, this.#spent.turns);
    if (!this.crossed) checkRoot(this.#db, this.#config, this.#rootId, { tokens: 0, usd: 0, turn: true });
    if (this.crossed) return false;
    this.#spent.turns++;
    return true;
  }

  /** Every event as it is parsed (before any is stored or merged). */
  observe(events: readonly NormalizedEvent[]): void {
    let seen = false;
    for (const e of events) {
      if (e.type !== 'worker.usage') continue;
      const tokens = (e.inputTokens || 0) + (e.outputTokens || 0);
      const price = priceOf(this.#prices, e.model || this.#model || 'unknown');
      const usd = price ? priceTokens(price, e.inputTokens || 0, e.cachedTokens || 0, e.outputTokens || 0) : typeof e.costUsd === 'number' ? e.costUsd : 0;
      this.#spent.tokens += tokens;
      this.#spent.usd += usd;
      this.#last = { tokens, usd };
      seen = true;
    }
    if (seen) this.#check();
  }

  dispose(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#leaveRoot();
  }

  /**
   * Reached, or would be by the next step: a worker reporting usage step by step (a runaway) is stopped
   * when one more step of the size it just took would cross the limit, not one step after.
   */
  #check(): void {
    const { max_tokens: tokens, max_cost_usd: usd } = this.#limits;
    if (tokens !== undefined && this.#spent.tokens + this.#last.tokens > tokens) this.#cross('max_tokens', tokens, this.#spent.tokens);
    else if (usd !== undefined && this.#spent.usd + this.#last.usd > usd) this.#cross('max_cost_usd', usd, this.#spent.usd);
    if (!this.crossed) checkRoot(this.#db, this.#config, this.#rootId, this.#last);
  }

  #cross(field: BudgetCrossing['field'], limit: number, spent: number): void {
    if (this.crossed) return;
    this.crossed = { field, limit, spent: field === 'max_cost_usd' || field === 'root_max_cost_usd' ? spent : Math.round(spent), at: Date.now() };
    this.#controller.abort('budget');
  }
}
