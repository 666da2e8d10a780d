import type { Config } from '../core/config.js';
import type { Db } from '../store/db.js';
import { taskIdsOfTree } from '../store/tasks.js';
import { rootLimitsOf, turnsOf, type BudgetCrossing, type RootLimits } from '../tasks/budget.js';
import { costOfRootExcept, effectivePrices } from '../tasks/cost.js';

/** A running task as its tree's totals see it: what it has spent (earlier attempts and this one, live). */
export interface MeteredRun {
  readonly taskId: string;
  readonly totals: { tokens: number; usd: number; turns: number };
  /** Its tree crossed a total: stop the run. */
  crossRoot(c: BudgetCrossing): void;
}

type Totals = { tokens: number; usd: number; turns: number };

/** How stale the stored part (tasks not running in this process, other hosts' included) may be. */
const STORED_MS = 500;

/**
 * One tree's totals in this process: the runs of it that run here are summed live (two tasks running at once
 * see each other's usage at the event it arrives), the rest of the tree from the store.
 */
class RootMeter {
  readonly runs = new Set<MeteredRun>();
  /** The total this tree reached here, until its limit is raised past it (a run joining meanwhile stops at once). */
  crossed: BudgetCrossing | null = null;
  stored: Totals = { tokens: 0, usd: 0, turns: 0 };
  storedAt = 0;
  constructor(
    readonly rootId: string,
    public limits: RootLimits,
  ) {}

  totals(db: Db, config: Config, now = Date.now()): Totals {
    if (now - this.storedAt > STORED_MS) {
      const skip = new Set([...this.runs].map((r) => r.taskId));
      const cost = costOfRootExcept(db, effectivePrices(config), this.rootId, skip);
      const ids = taskIdsOfTree(db, this.rootId).filter((id) => !skip.has(id));
      this.stored = { tokens: cost.models.reduce((n, m) => n + m.inputTokens + m.outputTokens, 0), usd: cost.usd ?? cost.reportedUsd ?? 0, turns: ids.reduce((n, id) => n + turnsOf(db, id), 0) };
      this.storedAt = now;
      this.limits = rootLimitsOf(db, config, this.rootId);
    }
    const t = { ...this.stored };
    for (const r of this.runs) {
      t.tokens += r.totals.tokens;
      t.usd += r.totals.usd;
      t.turns += r.totals.turns;
    }
    return t;
  }
}

const meters = new Map<string, RootMeter>();

/** Count a run in its tree's totals (when the tree has any); returns what takes it out again. */
export function meterRun(db: Db, config: Config, rootId: string, run: MeteredRun): () => void {
  const limits = rootLimitsOf(db, config, rootId);
  if (!Object.keys(limits).length) return () => undefined;
  let m = meters.get(rootId);
  if (!m) meters.set(rootId, (m = new RootMeter(rootId, limits)));
  m.runs.add(run);
  // Its earlier attempts now count through it, not the store.
  m.storedAt = 0;
  const meter = m;
  const reached = stillCrossed(m, limits);
  if (reached) run.crossRoot(reached);
  return () => {
    meter.runs.delete(run);
    // What it spent is in the store now (its end wrote it): read again rather than lose it for a moment.
    meter.storedAt = 0;
    if (meter.runs.size === 0 && meters.get(rootId) === meter) meters.delete(rootId);
  };
}

/**
 * After a run's usage (`next`: the step it just took, what the next one is expected to cost) or before a
 * turn (`turn`: one more): the crossing, when the tree's total is reached or would be by that step. Every
 * run of the tree in this process is stopped with it; other hosts' runs see it in the store.
 */
export function checkRoot(db: Db, config: Config, rootId: string, next: { tokens: number; usd: number; turn?: boolean }): BudgetCrossing | null {
  const m = meters.get(rootId);
  if (!m) return null;
  const t = m.totals(db, config);
  const { root_max_tokens: tokens, root_max_cost_usd: usd, root_max_turns: turns } = m.limits;
  const at = Date.now();
  let c: BudgetCrossing | null = stillCrossed(m, m.limits);
  if (tokens !== undefined && t.tokens + next.tokens > tokens) c = { field: 'root_max_tokens', limit: tokens, spent: Math.round(t.tokens), at };
  else if (usd !== undefined && t.usd + next.usd > usd) c = { field: 'root_max_cost_usd', limit: usd, spent: t.usd, at };
  else if (turns !== undefined && next.turn && t.turns >= turns) c = { field: 'root_max_turns', limit: turns, spent: t.turns, at };
  if (c) {
    m.crossed = c;
    for (const r of [...m.runs]) r.crossRoot(c);
  }
  return c;
}

/** The crossing the tree's meter keeps, while the limit it crossed has not been raised past it. */
function stillCrossed(m: RootMeter, limits: RootLimits): BudgetCrossing | null {
  const c = m.crossed;
  if (!c) return null;
  const now = limits[c.field as keyof RootLimits];
  if (now !== undefined && now <= c.limit) return c;
  m.crossed = null;
  return null;
}

/**
 * Trees whose total a run in this process reached, before its stop is in the store: the dispatcher starts
 * none of their tasks in the moment between (the store's pending budget requests cover the rest).
 */
export function crossedRoots(): string[] {
  return [...meters.values()].filter((m) => m.crossed !== null).map((m) => m.rootId);
}
