import { describe, expect, it } from 'vitest';
import { aggregate, classifySamples, computeMetrics } from '../../main/cachelab/metrics.js';
import type { RouteCheck, UsageSample } from '../../main/cachelab/samples.js';

const MIN = 60_000;
const NOW = 10_000_000_000;
let seq = 0;

function sample(p: Partial<UsageSample> & { task: string; ts: number; input: number; cached: number }): UsageSample {
  return {
    eventSeq: ++seq, taskId: p.task, attempt: 1, worker: p.worker ?? 'claude-code', cohort: p.cohort === undefined ? 'c1' : p.cohort, ts: p.ts,
    inputTokens: p.input, cachedTokens: p.cached, outputTokens: p.outputTokens ?? 10, routedModel: 'm', reportedModel: 'm', route: p.route ?? 'verified',
  };
}

/** One cold sample, then `n` warm samples from other tasks at `cached`/`input` each, all inside the window. */
function cohort(n: number, input: number, cached: number, route: RouteCheck = 'verified', cohortKey = 'c1'): UsageSample[] {
  const out = [sample({ task: `${cohortKey}-t0`, ts: NOW - 30 * MIN, input, cached: 0, route, cohort: cohortKey })];
  for (let i = 1; i <= n; i++) out.push(sample({ task: `${cohortKey}-t${i}`, ts: NOW - 30 * MIN + i * 1000, input, cached, route, cohort: cohortKey }));
  return out;
}

describe('cache metrics arithmetic', () => {
  it('weights the hit rate by tokens, not by sample', () => {
    const a = aggregate([sample({ task: 'a', ts: 1, input: 100, cached: 0 }), sample({ task: 'b', ts: 2, input: 900, cached: 900 })]);
    expect(a).toMatchObject({ samples: 2, inputTokens: 1000, cachedTokens: 900, hitRate: 0.9 });
    // The mean of per-sample rates would be 50 %.
    expect(aggregate([]).hitRate).toBeNull();
    // A CLI that reports more cached than input tokens never pushes the rate past 100 %.
    expect(aggregate([sample({ task: 'x', ts: 1, input: 10, cached: 20 })]).hitRate).toBe(1);
  });

  it('classifies cold, warm and indeterminate', () => {
    const W = 60 * MIN;
    const s = classifySamples([
      sample({ task: 'a', ts: 1000, input: 100, cached: 0 }), // first of the cohort: cold
      sample({ task: 'a', ts: 2000, input: 100, cached: 90 }), // same task again (a follow-up turn): still cold
      sample({ task: 'b', ts: 3000, input: 100, cached: 90 }), // another task after a: warm
      sample({ task: 'c', ts: 4000, input: 100, cached: 90, route: 'not_exposed', worker: 'codex' }), // counted, route from config
      sample({ task: 'd', ts: 5000, input: 100, cached: 90, route: 'mismatch' }),
      sample({ task: 'e', ts: 6000, input: 100, cached: 90, route: 'missing' }),
      sample({ task: 'f', ts: 7000, input: 100, cached: 90, route: 'legacy' }),
      sample({ task: 'g', ts: 8000, input: 100, cached: 90, cohort: null }),
      sample({ task: 'h', ts: 9000, input: 100, cached: 0, cohort: 'other' }),
    ], W);
    expect(s.map((x) => x.class)).toEqual(['cold', 'cold', 'warm', 'warm', 'indeterminate', 'indeterminate', 'indeterminate', 'indeterminate', 'cold']);
  });

  it('is warm only when the earlier sample lies within the window (edge inclusive)', () => {
    const W = 10 * MIN;
    const at = (ts: number) => classifySamples([sample({ task: 'a', ts: 0 + 1_000_000, input: 1, cached: 0 }), sample({ task: 'b', ts, input: 1, cached: 1 })], W)[1].class;
    expect(at(1_000_000 + W)).toBe('warm');
    expect(at(1_000_000 + W + 1)).toBe('cold');
    // A sample that ran another model than routed did not warm the cohort's cache.
    const afterMismatch = classifySamples([sample({ task: 'a', ts: 1, input: 1, cached: 0, route: 'mismatch' }), sample({ task: 'b', ts: 2, input: 1, cached: 1 })], W);
    expect(afterMismatch[1].class).toBe('cold');
  });

  it('insufficient_samples below 20 verified warm samples, with the remainder', () => {
    const m = computeMetrics(cohort(19, 1000, 950), { now: NOW });
    expect(m.cohorts[0]).toMatchObject({ status: 'insufficient_samples', warmSamples: 19, remainingSamples: 1, samples: 20, coldSamples: 1 });
    expect(m.target).toMatchObject({ status: 'insufficient_samples', remainingSamples: 1, rate: 0.9, minSamples: 20 });
  });

  it('achieved at exactly 20 warm samples at exactly the target', () => {
    const m = computeMetrics(cohort(20, 1000, 900), { now: NOW });
    expect(m.cohorts[0]).toMatchObject({ status: 'achieved', warmSamples: 20, remainingSamples: 0, hitRate: 0.9 });
    expect(m.warm).toMatchObject({ samples: 20, inputTokens: 20_000, cachedTokens: 18_000, hitRate: 0.9 });
    expect(m.cold).toMatchObject({ samples: 1, hitRate: 0 });
    expect(m.overall.hitRate).toBeCloseTo(18_000 / 21_000, 10);
    expect(m.target.status).toBe('achieved');
  });

  it('below_target just under the target; a custom target changes the verdict', () => {
    expect(computeMetrics(cohort(20, 1000, 899), { now: NOW }).cohorts[0].status).toBe('below_target');
    expect(computeMetrics(cohort(20, 1000, 899), { now: NOW, target: 0.85 }).cohorts[0].status).toBe('achieved');
  });

  it('unverified_route when enough warm samples exist but their route is not verified', () => {
    const m = computeMetrics(cohort(25, 1000, 990, 'missing'), { now: NOW });
    expect(m.cohorts[0]).toMatchObject({ status: 'unverified_route', warmSamples: 0, remainingSamples: 20, route: 'unverified' });
    expect(m.indeterminate.samples).toBe(26);
    expect(m.cohorts[0].note).toMatch(/without a reported model/);
    const mismatch = computeMetrics(cohort(25, 1000, 990, 'mismatch'), { now: NOW });
    expect(mismatch.cohorts[0].status).toBe('unverified_route');
  });

  it('measures a CLI that never reports its model but never certifies it, and says why', () => {
    const m = computeMetrics(cohort(20, 1000, 950, 'not_exposed').map((s) => ({ ...s, worker: 'codex' })), { now: NOW });
    expect(m.cohorts[0]).toMatchObject({ status: 'unverified_route', route: 'not_exposed', worker: 'codex', warmSamples: 20 });
    expect(m.cohorts[0].hitRate).toBeCloseTo(0.95, 10);
    expect(m.cohorts[0].note).toMatch(/codex never reports the model it ran, so the route .* cannot be verified/);
    expect(m.target.status).toBe('unverified_route');
    // Verified samples of the same cohort certify it; the unverified ones do not count towards the 20.
    const mixed = [...cohort(20, 1000, 950, 'not_exposed'), ...cohort(20, 1000, 950).map((s) => ({ ...s, ts: s.ts + 1, taskId: `v-${s.taskId}` }))];
    expect(computeMetrics(mixed, { now: NOW + 10 }).cohorts[0].status).toBe('achieved');
  });

  it('counts only samples inside the window; an older sample still makes the first one warm', () => {
    const W = 60 * MIN;
    const samples = [
      sample({ task: 'old', ts: NOW - W - 1, input: 1000, cached: 0 }), // just outside: not counted
      sample({ task: 'edge', ts: NOW - W, input: 1000, cached: 950 }), // on the edge: counted, warm (old is 1 ms earlier)
      ...Array.from({ length: 19 }, (_, i) => sample({ task: `t${i}`, ts: NOW - W + (i + 1) * 1000, input: 1000, cached: 950 })),
    ];
    const m = computeMetrics(samples, { now: NOW, windowMs: W });
    expect(m.samples).toBe(20);
    expect(m.cold.samples).toBe(0);
    expect(m.cohorts[0]).toMatchObject({ status: 'achieved', warmSamples: 20 });
    // One minute later the edge sample leaves the window: 19 warm, one short.
    const later = computeMetrics(samples, { now: NOW + 1, windowMs: W });
    expect(later.cohorts[0]).toMatchObject({ status: 'insufficient_samples', warmSamples: 19, remainingSamples: 1 });
  });

  it('keeps cohorts apart, best status first, and gives a time series', () => {
    const m = computeMetrics([...cohort(5, 100, 50, 'verified', 'small'), ...cohort(20, 100, 95, 'verified', 'big')], { now: NOW });
    expect(m.cohorts.map((c) => [c.cohort, c.status])).toEqual([['big', 'achieved'], ['small', 'insufficient_samples']]);
    expect(m.target.cohort).toBe('big');
    expect(m.series.length).toBeGreaterThan(0);
    expect(m.series.reduce((n, p) => n + p.samples, 0)).toBe(27);
    for (const p of m.series) expect(p.hitRate === null || (p.hitRate >= 0 && p.hitRate <= 1)).toBe(true);
  });

  it('reports nothing certified without samples', () => {
    const m = computeMetrics([], { now: NOW });
    expect(m).toMatchObject({ samples: 0, cohorts: [], series: [], remainingSamples: 20, target: { status: 'insufficient_samples', cohort: null } });
  });
});
