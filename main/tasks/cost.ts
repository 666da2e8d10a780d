import type { Config } from '../core/config.js';
import type { Db } from '../store/db.js';
import { usageEventsOfRoot, usageEventsOfTask } from '../store/task-history.js';

/** USD per million tokens of one model. */
export interface Price {
  input: number;
  /** Prompt-cache reads; the input price when a table leaves it out. */
  cached?: number;
  output: number;
}

/**
 * Built-in prices, USD per million tokens — assumptions, not quotes: the providers' published list
 * prices for the default models when this table was written (gpt-5.5 priced like gpt-5, gpt-5.5-mini
 * like gpt-5-mini; Claude cache reads at a tenth of input). `[prices."model"]` in config.toml
 * overrides or adds models; a model in neither is reported as unpriced, never guessed.
 */
export const DEFAULT_PRICES: Readonly<Record<string, Price>> = {
  'gpt-5.5': { input: 1.25, cached: 0.125, output: 10 },
  'gpt-5.5-mini': { input: 0.25, cached: 0.025, output: 2 },
  'claude-sonnet-4-5': { input: 3, cached: 0.3, output: 15 },
  'claude-haiku-4-5': { input: 1, cached: 0.1, output: 5 },
  'mock-model': { input: 0, cached: 0, output: 0 },
};

/** The price table in effect: the defaults with config.toml's `[prices]` over them. */
export function effectivePrices(config: Pick<Config, 'prices'>): Record<string, Price> {
  return { ...DEFAULT_PRICES, ...config.prices };
}

export interface ModelCost {
  /** As the worker reported it (else the task's routed model); `unknown` when neither names one. */
  model: string;
  inputTokens: number;
  cachedTokens: number;
  outputTokens: number;
  /** null when the model has no price. */
  usd: number | null;
}

export interface CostSummary {
  /** Sum over priced models; null when nothing was priced (no usage yet, or only unpriced models). */
  usd: number | null;
  /** Models with usage but no price: `usd` leaves their tokens out. */
  unpriced: string[];
  models: ModelCost[];
  /** What workers reported themselves (Claude Code's total_cost_usd), summed; null when none did. */
  reportedUsd: number | null;
}

/** The table's entry for `model`, ignoring a provider prefix (`openai/gpt-5.5`) and a dated suffix. */
export function priceOf(prices: Record<string, Price>, model: string): Price | null {
  if (prices[model]) return prices[model];
  const bare = model.toLowerCase().replace(/^.*\//, '');
  const undated = bare.replace(/-(?:\d{6,8}|latest)$/, '');
  for (const [name, p] of Object.entries(prices)) {
    const key = name.toLowerCase();
    if (key === bare || key === undated) return p;
  }
  return null;
}

/**
 * USD of token counts at `price`. Cached tokens are part of input tokens (the Cache Lab's hit rate is
 * cached / input), so they are billed at the cached price and the rest of the input at the input price.
 */
export function priceTokens(price: Price, input: number, cached: number, output: number): number {
  const hit = Math.min(cached, input);
  return ((input - hit) * price.input + hit * (price.cached ?? price.input) + output * price.output) / 1_000_000;
}

interface UsageRow {
  payload: string;
  task_model: string | null;
}

/** Fold usage rows into per-model token counts and their cost. */
function summarize(rows: UsageRow[], prices: Record<string, Price>): CostSummary {
  const byModel = new Map<string, ModelCost>();
  let reported: number | null = null;
  for (const r of rows) {
    const p = JSON.parse(r.payload) as { inputTokens?: number; cachedTokens?: number; outputTokens?: number; model?: string | null; costUsd?: number | null };
    const model = p.model || r.task_model || 'unknown';
    const m = byModel.get(model) ?? { model, inputTokens: 0, cachedTokens: 0, outputTokens: 0, usd: null };
    m.inputTokens += Number(p.inputTokens) || 0;
    m.cachedTokens += Number(p.cachedTokens) || 0;
    m.outputTokens += Number(p.outputTokens) || 0;
    byModel.set(model, m);
    if (typeof p.costUsd === 'number') reported = (reported ?? 0) + p.costUsd;
  }
  let usd: number | null = null;
  const unpriced: string[] = [];
  for (const m of byModel.values()) {
    const price = priceOf(prices, m.model);
    if (!price) {
      unpriced.push(m.model);
      continue;
    }
    m.usd = priceTokens(price, m.inputTokens, m.cachedTokens, m.outputTokens);
    usd = (usd ?? 0) + m.usd;
  }
  return { usd, unpriced, models: [...byModel.values()], reportedUsd: reported };
}

/** Cost of one task (every attempt): its `worker.usage` events × the price table. */
export function costOfTask(db: Db, prices: Record<string, Price>, taskId: string): CostSummary {
  const rows: UsageRow[] = usageEventsOfTask(db, taskId);
  return summarize(rows, prices);
}

/** Cost of a tree's tasks but those in `skip` (tasks whose running attempt is counted live elsewhere). */
export function costOfRootExcept(db: Db, prices: Record<string, Price>, rootId: string, skip: ReadonlySet<string>): CostSummary {
  return summarize(usageEventsOfRoot(db, rootId).filter((r) => !skip.has(r.task_id)), prices);
}

/** Cost of a whole tree (every task whose root is `rootId`, the root included), and USD per task of it. */
export function costOfRoot(db: Db, prices: Record<string, Price>, rootId: string): { total: CostSummary; byTask: Map<string, number | null> } {
  const rows = usageEventsOfRoot(db, rootId);
  const grouped = new Map<string, UsageRow[]>();
  for (const r of rows) grouped.set(r.task_id, [...(grouped.get(r.task_id) ?? []), r]);
  return { total: summarize(rows, prices), byTask: new Map([...grouped].map(([id, rs]) => [id, summarize(rs, prices).usd])) };
}
