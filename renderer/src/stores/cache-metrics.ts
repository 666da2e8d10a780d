import type { CommandResult } from '../api/commands.js';

/** get_cache_metrics as the engine answers it. */
export type CacheMetrics = CommandResult<'get_cache_metrics'>;
type Cohort = CacheMetrics['cohorts'][number];
type Aggregate = CacheMetrics['overall'];

export interface HitPoint {
  label: string;
  rate: number;
}

/** One cohort as a person reads it: every figure with its unit. */
export interface CohortLine {
  cohort: string;
  who: string;
  status: string;
  hitRate: string;
  warm: string;
  stillNeeded: string;
  route: string;
  tokens: string;
  note: string | null;
}

export interface CacheView {
  /** Sentences: the hit rate overall, warm and cold, and how many samples the window holds. */
  summary: { key: string; text: string }[];
  /** The target in one sentence (what it asks, where it stands, what is still missing). */
  target: string;
  targetRate: number;
  series: HitPoint[];
  cohorts: CohortLine[];
}

const count = (n: number) => n.toLocaleString('en-US');
const plural = (n: number, one: string, many = `${one}s`) => `${count(n)} ${n === 1 ? one : many}`;

/** A rate in 0..1 as a percentage; always with its unit, so 0 reads "0.0%" like any other rate. */
export function percent(r: number | null): string {
  return r === null ? '—' : `${(r * 100).toFixed(1)}%`;
}

function aggregateSentence(what: string, a: Aggregate): string {
  if (!a.samples) return `${what}: no samples yet.`;
  if (a.hitRate === null) return `${what}: ${plural(a.samples, 'sample')}, none reported input tokens.`;
  return `${what}: ${percent(a.hitRate)} of ${plural(a.inputTokens, 'input token')} came from the cache, over ${plural(a.samples, 'sample')}.`;
}

const STATUS: Record<CacheMetrics['target']['status'], string> = {
  insufficient_samples: 'not enough samples yet',
  unverified_route: 'route not verified',
  below_target: 'below target',
  achieved: 'target reached',
};

const ROUTE: Record<Cohort['route'], string> = {
  verified: 'verified (the worker reported the model it ran)',
  not_exposed: 'from configuration (the worker does not report its model)',
  unverified: 'not verified (another or no model reported)',
  none: 'no route recorded',
};

function targetSentence(m: CacheMetrics): string {
  const t = m.target;
  const ask = `Target: ${percent(t.rate)} of input tokens from the cache, judged on ${plural(t.minSamples, 'warm sample')} within ${plural(t.windowMinutes, 'minute')}`;
  const where = t.cohort ? ` (best cohort ${t.cohort})` : '';
  switch (t.status) {
    case 'insufficient_samples':
      return `${ask}: not judged yet, ${plural(t.remainingSamples, 'more warm sample')} needed${where}.`;
    case 'unverified_route':
      return `${ask}: cannot be certified${where}, because the route that served it is not verified.`;
    case 'below_target':
      return `${ask}: below target${where}.`;
    case 'achieved':
      return `${ask}: reached${where}.`;
  }
}

function cohortLine(c: Cohort): CohortLine {
  return {
    cohort: c.cohort,
    who: c.model ? `${c.worker} · ${c.model}` : c.worker,
    status: STATUS[c.status],
    hitRate: c.hitRate === null ? 'no warm samples yet' : percent(c.hitRate),
    warm: `${plural(c.warmSamples, 'warm sample')} of ${plural(c.samples, 'sample')} (${count(c.coldSamples)} cold)`,
    stillNeeded: c.remainingSamples ? `${plural(c.remainingSamples, 'more warm sample')} needed` : 'enough samples',
    route: ROUTE[c.route],
    tokens: `${count(c.inputTokens)} input tokens, ${count(c.cachedTokens)} cached`,
    note: c.note,
  };
}

export function readCacheMetrics(m: CacheMetrics): CacheView {
  const summary = [
    { key: 'overall', text: aggregateSentence('All turns', m.overall) },
    { key: 'warm', text: aggregateSentence('Warm turns (a turn of the same cohort ran just before)', m.warm) },
    { key: 'cold', text: aggregateSentence('Cold turns (the first of their cohort)', m.cold) },
    { key: 'samples', text: `${plural(m.samples, 'usage sample')} in the last ${plural(m.window.minutes, 'minute')}${m.remainingSamples ? `; ${plural(m.remainingSamples, 'more warm sample')} before the target can be judged` : ''}.` },
  ];
  const series: HitPoint[] = [];
  for (const p of m.series) if (p.hitRate !== null) series.push({ label: new Date(p.ts).toLocaleTimeString(), rate: p.hitRate });
  return { summary, target: targetSentence(m), targetRate: m.target.rate, series, cohorts: m.cohorts.map(cohortLine) };
}
