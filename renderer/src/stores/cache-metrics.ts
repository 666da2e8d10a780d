/**
 * get_cache_metrics is owned by the Cache Lab engineer; this reads its reply tolerantly (camelCase or
 * snake_case, rates as 0–1) so the page keeps working while that shape settles.
 */
export interface HitPoint {
  label: string;
  rate: number;
}
export interface CacheView {
  summary: { label: string; value: string }[];
  series: HitPoint[];
  cohorts: Record<string, unknown>[];
  target: Record<string, unknown> | null;
}

type Obj = Record<string, unknown>;
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const pick = (o: Obj, ...keys: string[]): unknown => keys.map((k) => o[k]).find((v) => v !== undefined);

function rateOf(o: Obj): number | null {
  const r = num(pick(o, 'hitRate', 'hit_rate', 'rate'));
  if (r !== null) return r;
  const cached = num(pick(o, 'cachedTokens', 'cached_tokens', 'cached'));
  const input = num(pick(o, 'inputTokens', 'input_tokens', 'input'));
  return cached !== null && input ? cached / input : null;
}

export function percent(r: number | null): string {
  return r === null ? '—' : `${(r * 100).toFixed(1)}%`;
}

export function readCacheMetrics(data: unknown): CacheView {
  const d = (data ?? {}) as Obj;
  const summary: CacheView['summary'] = [];
  for (const key of ['overall', 'cold', 'warm']) {
    const v = d[key];
    const r = typeof v === 'number' ? v : v && typeof v === 'object' ? rateOf(v as Obj) : null;
    if (r !== null) summary.push({ label: `${key} hit rate`, value: percent(r) });
  }
  if (!summary.length && rateOf(d) !== null) summary.push({ label: 'hit rate', value: percent(rateOf(d)) });
  for (const key of ['samples', 'sampleCount', 'sample_count', 'remaining', 'remainingSamples', 'remaining_samples']) {
    const v = num(d[key]);
    if (v !== null) summary.push({ label: key.replace(/_/g, ' ').replace(/([A-Z])/g, ' $1').toLowerCase(), value: String(v) });
  }
  const rawSeries = pick(d, 'series', 'timeline', 'history', 'buckets') ?? (Array.isArray(d.samples) ? d.samples : []);
  const series: HitPoint[] = [];
  if (Array.isArray(rawSeries)) {
    for (const p of rawSeries as Obj[]) {
      const rate = rateOf(p);
      const t = pick(p, 'ts', 't', 'time', 'at', 'bucket', 'start');
      if (rate === null) continue;
      series.push({ label: typeof t === 'number' ? new Date(t).toLocaleTimeString() : String(t ?? series.length + 1), rate });
    }
  }
  const cohorts = Array.isArray(d.cohorts) ? (d.cohorts as Obj[]) : [];
  const target = (pick(d, 'target', 'targetStatus', 'target_status') as Obj | undefined) ?? null;
  return { summary, series, cohorts, target: target && typeof target === 'object' ? target : null };
}
