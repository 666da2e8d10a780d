import { MODEL_NOT_EXPOSED, type RouteCheck, type UsageSample } from './samples.js';

/**
 * Cache metrics, pure arithmetic over usage samples. Hit rate is token-weighted:
 * Σcached / Σinput. A sample is `warm` when an earlier sample of another task in the same cohort lies
 * within the window before it, `cold` otherwise, and `indeterminate` when its route is unverified
 * (CLI reported another model or none) or it predates the Cache Lab. A warm cohort is `achieved` with
 * ≥ minSamples route-verified warm samples in the window whose hit rate is ≥ target. A CLI that never
 * reports the model it ran (`not_exposed`) is measured (its samples are warm or cold, its hit rate shown)
 * but never certified: what it ran is only what the configuration asked for, so such a cohort stays
 * `unverified_route` however good its rate.
 */
export type SampleClass = 'cold' | 'warm' | 'indeterminate';
export type TargetStatus = 'insufficient_samples' | 'unverified_route' | 'below_target' | 'achieved';

export const DEFAULT_WINDOW_MS = 60 * 60 * 1000;
export const DEFAULT_TARGET = 0.9;
export const MIN_WARM_SAMPLES = 20;

export interface MetricsOptions {
  now: number;
  windowMs?: number;
  target?: number;
  minSamples?: number;
}

export interface Aggregate {
  samples: number;
  inputTokens: number;
  cachedTokens: number;
  outputTokens: number;
  /** Σcached / Σinput in 0..1; null without input tokens. */
  hitRate: number | null;
}

export interface CohortMetrics {
  cohort: string;
  status: TargetStatus;
  /** Hit rate of the warm samples (route-verified, or taken from configuration where the CLI never says). */
  hitRate: number | null;
  warmSamples: number;
  remainingSamples: number;
  samples: number;
  worker: string;
  model: string | null;
  route: 'verified' | 'not_exposed' | 'unverified' | 'none';
  coldSamples: number;
  indeterminateSamples: number;
  inputTokens: number;
  cachedTokens: number;
  note: string | null;
}

export interface SeriesPoint {
  ts: number;
  hitRate: number | null;
  warmHitRate: number | null;
  samples: number;
}

export interface CacheMetrics {
  generatedAt: number;
  window: { minutes: number; since: number; until: number };
  target: { rate: number; minSamples: number; windowMinutes: number; status: TargetStatus; cohort: string | null; remainingSamples: number };
  overall: Aggregate;
  cold: Aggregate;
  warm: Aggregate;
  indeterminate: Aggregate;
  samples: number;
  remainingSamples: number;
  cohorts: CohortMetrics[];
  series: SeriesPoint[];
}

export interface ClassifiedSample extends UsageSample {
  class: SampleClass;
  /** Warm by position (an earlier sample of another task in the cohort), whatever its route. */
  afterWarmup: boolean;
}

const CERTIFIABLE: ReadonlySet<RouteCheck> = new Set(['verified', 'not_exposed']);

/**
 * Classify samples (any order in, oldest first out). The lookback for warmth is `windowMs`. Linear:
 * per cohort (and route kind) only the newest sample and the newest one of another task matter.
 */
export function classifySamples(samples: UsageSample[], windowMs: number): ClassifiedSample[] {
  const sorted = [...samples].sort((a, b) => a.ts - b.ts || a.eventSeq - b.eventSeq);
  // A sample that ran another model than routed warmed another cache than its cohort's.
  const recent = new Map<string, { last: UsageSample; otherTask: UsageSample | null }>();
  return sorted.map((s) => {
    let afterWarmup = false;
    if (s.cohort) {
      const key = `${s.cohort}\0${s.route === 'mismatch'}`;
      const r = recent.get(key);
      const prior = r ? (r.last.taskId !== s.taskId ? r.last : r.otherTask) : null;
      afterWarmup = prior !== null && prior.ts >= s.ts - windowMs;
      recent.set(key, { last: s, otherTask: r ? (r.last.taskId !== s.taskId ? r.last : r.otherTask) : null });
    }
    const cls: SampleClass = !s.cohort || !CERTIFIABLE.has(s.route) ? 'indeterminate' : afterWarmup ? 'warm' : 'cold';
    return { ...s, class: cls, afterWarmup };
  });
}

export function aggregate(samples: readonly UsageSample[]): Aggregate {
  let inputTokens = 0;
  let cachedTokens = 0;
  let outputTokens = 0;
  for (const s of samples) {
    inputTokens += s.inputTokens;
    cachedTokens += Math.min(s.cachedTokens, s.inputTokens);
    outputTokens += s.outputTokens;
  }
  return { samples: samples.length, inputTokens, cachedTokens, outputTokens, hitRate: inputTokens > 0 ? cachedTokens / inputTokens : null };
}

const STATUS_RANK: Record<TargetStatus, number> = { achieved: 3, below_target: 2, unverified_route: 1, insufficient_samples: 0 };

/** Target status of one cohort from its samples in the window: only route-verified warm samples certify. */
export function cohortStatus(samples: ClassifiedSample[], target: number, minSamples: number): { status: TargetStatus; hitRate: number | null; warm: number; remaining: number } {
  const warm = samples.filter((s) => s.class === 'warm');
  const verifiedWarm = warm.filter((s) => s.route === 'verified');
  const unverifiedWarm = samples.filter((s) => s.afterWarmup && s.route !== 'verified').length;
  const { hitRate } = aggregate(warm);
  const remaining = Math.max(0, minSamples - verifiedWarm.length);
  let status: TargetStatus;
  if (verifiedWarm.length >= minSamples) {
    const verifiedRate = aggregate(verifiedWarm).hitRate;
    status = verifiedRate !== null && verifiedRate >= target ? 'achieved' : 'below_target';
  } else if (verifiedWarm.length + unverifiedWarm >= minSamples) status = 'unverified_route';
  else status = 'insufficient_samples';
  return { status, hitRate, warm: warm.length, remaining };
}

function cohortEntry(cohort: string, list: ClassifiedSample[], target: number, minSamples: number): CohortMetrics {
  const st = cohortStatus(list, target, minSamples);
  const all = aggregate(list);
  const last = list[list.length - 1];
  const certified = list.filter((s) => s.class !== 'indeterminate');
  const notExposed = certified.some((s) => s.route === 'not_exposed');
  const route: CohortMetrics['route'] = !certified.length ? (list.length ? 'unverified' : 'none') : notExposed ? 'not_exposed' : 'verified';
  const notes: string[] = [];
  if (notExposed) notes.push(`${last.worker} never reports the model it ran, so the route (${last.routedModel ?? 'worker default'}, from configuration) cannot be verified: the hit rate is measured, the target is not certified`);
  const mismatched = list.filter((s) => s.route === 'mismatch').length;
  if (mismatched) notes.push(`${mismatched} sample(s) ran another model than routed`);
  const missing = list.filter((s) => s.route === 'missing').length;
  if (missing) notes.push(`${missing} sample(s) without a reported model`);
  const legacy = list.filter((s) => s.route === 'legacy').length;
  if (legacy) notes.push(`${legacy} sample(s) from before the prompt protocol`);
  return {
    cohort, status: st.status, hitRate: st.hitRate, warmSamples: st.warm, remainingSamples: st.remaining, samples: list.length,
    worker: last.worker, model: last.routedModel ?? last.reportedModel, route,
    coldSamples: list.filter((s) => s.class === 'cold').length, indeterminateSamples: list.filter((s) => s.class === 'indeterminate').length,
    inputTokens: all.inputTokens, cachedTokens: all.cachedTokens, note: notes.length ? notes.join('; ') : null,
  };
}

function buildSeries(list: ClassifiedSample[], since: number, now: number): SeriesPoint[] {
  if (!list.length) return [];
  const start = Math.max(since, list[0].ts);
  const bucketMs = Math.max(5000, Math.ceil((now - start + 1) / 30));
  const buckets = new Map<number, ClassifiedSample[]>();
  for (const s of list) {
    const b = start + Math.floor((s.ts - start) / bucketMs) * bucketMs;
    const list = buckets.get(b);
    if (list) list.push(s);
    else buckets.set(b, [s]);
  }
  return [...buckets.entries()].sort((a, b) => a[0] - b[0]).map(([ts, l]) => ({ ts, hitRate: aggregate(l).hitRate, warmHitRate: aggregate(l.filter((s) => s.class === 'warm')).hitRate, samples: l.length }));
}

/**
 * Metrics over samples with ts in [now − window, now]. `samples` may include older ones (up to one
 * more window back): they only serve as the warm-up that makes later samples warm.
 */
export function computeMetrics(samples: UsageSample[], opts: MetricsOptions): CacheMetrics {
  const windowMs = opts.windowMs ?? DEFAULT_WINDOW_MS;
  const target = opts.target ?? DEFAULT_TARGET;
  const minSamples = opts.minSamples ?? MIN_WARM_SAMPLES;
  const since = opts.now - windowMs;
  const inWindow = classifySamples(samples, windowMs).filter((s) => s.ts >= since && s.ts <= opts.now);
  const groups = new Map<string, ClassifiedSample[]>();
  for (const s of inWindow) {
    if (!s.cohort) continue;
    const list = groups.get(s.cohort);
    if (list) list.push(s);
    else groups.set(s.cohort, [s]);
  }
  const cohorts = [...groups.entries()]
    .map(([c, list]) => cohortEntry(c, list, target, minSamples))
    .sort((a, b) => STATUS_RANK[b.status] - STATUS_RANK[a.status] || b.warmSamples - a.warmSamples || a.cohort.localeCompare(b.cohort));
  const best = cohorts[0] ?? null;
  const remaining = best ? best.remainingSamples : minSamples;
  return {
    generatedAt: opts.now,
    window: { minutes: windowMs / 60_000, since, until: opts.now },
    target: { rate: target, minSamples, windowMinutes: windowMs / 60_000, status: best?.status ?? 'insufficient_samples', cohort: best?.cohort ?? null, remainingSamples: remaining },
    overall: aggregate(inWindow),
    cold: aggregate(inWindow.filter((s) => s.class === 'cold')),
    warm: aggregate(inWindow.filter((s) => s.class === 'warm')),
    indeterminate: aggregate(inWindow.filter((s) => s.class === 'indeterminate')),
    samples: inWindow.length,
    remainingSamples: remaining,
    cohorts,
    series: buildSeries(inWindow, since, opts.now),
  };
}

/** Workers whose CLIs never report a model, for the metrics' explanation. */
export const ROUTE_NOT_EXPOSED_WORKERS = [...MODEL_NOT_EXPOSED];
