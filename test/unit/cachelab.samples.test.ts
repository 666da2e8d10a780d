import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkRoute, materializeSamples, sameModel } from '../../main/cachelab/samples.js';
import { appendEvent } from '../../main/store/events.js';
import { makeHome, type TestHome } from '../helpers/env.js';

let h: TestHome;
beforeEach(() => {
  h = makeHome();
});
afterEach(() => h.cleanup());

const count = () => (h.engine.db.prepare('SELECT COUNT(*) AS n FROM usage_samples').get() as { n: number }).n;
const rows = () => h.engine.db.prepare('SELECT * FROM usage_samples ORDER BY event_seq').all() as Record<string, unknown>[];

describe('usage samples', () => {
  it('materializes one sample per worker.usage event, idempotently', async () => {
    const { task } = await h.call('delegate_task', { objective: 'x', workspace: h.repo, worker: 'claude-code', model: 'claude-sonnet-4-5' });
    const cohort = (h.engine.db.prepare('SELECT cohort FROM tasks WHERE id = ?').get(task.id) as { cohort: string }).cohort;
    h.engine.write(() => {
      appendEvent(h.engine.db, task.id, 'worker.prompt', { protocol: 'lw-prompt/2', cohort, model: 'claude-sonnet-4-5', attempt: 1 });
      appendEvent(h.engine.db, task.id, 'worker.started', { sessionId: 's', model: 'claude-sonnet-4-5-20250929' });
      appendEvent(h.engine.db, task.id, 'worker.usage', { inputTokens: 1000, cachedTokens: 900, outputTokens: 50, model: 'claude-sonnet-4-5-20250929' });
      appendEvent(h.engine.db, task.id, 'worker.usage', { inputTokens: 500, cachedTokens: 0, outputTokens: 5, model: 'claude-haiku-4-5' });
    });
    expect(h.engine.write(() => materializeSamples(h.engine.db))).toBe(2);
    expect(h.engine.write(() => materializeSamples(h.engine.db))).toBe(0);
    // Metrics read the same samples however often they are asked.
    await h.call('get_cache_metrics', {});
    await h.call('get_cache_metrics', {});
    expect(count()).toBe(2);
    expect(rows().map((r) => [r.input_tokens, r.cached_tokens, r.output_tokens, r.route, r.cohort])).toEqual([
      [1000, 900, 50, 'verified', cohort],
      [500, 0, 5, 'mismatch', cohort],
    ]);
    // A later event is picked up by the next read.
    h.engine.write(() => appendEvent(h.engine.db, task.id, 'worker.usage', { inputTokens: 10, cachedTokens: 0, outputTokens: 1 }));
    const m = await h.call('get_cache_metrics', {});
    expect(count()).toBe(3);
    expect(m.samples).toBe(3);
    // No model on the usage event: the worker.started model stands in.
    expect(rows()[2].reported_model).toBe('claude-sonnet-4-5-20250929');
  });

  it('marks usage without a protocol prompt event as legacy (indeterminate)', async () => {
    const { task } = await h.call('delegate_task', { objective: 'x', workspace: h.repo });
    h.engine.write(() => {
      appendEvent(h.engine.db, task.id, 'worker.prompt', { bytes: 10, stableBytes: 5 });
      appendEvent(h.engine.db, task.id, 'worker.usage', { inputTokens: 100, cachedTokens: 10, outputTokens: 1, model: 'mock-model' });
    });
    const m = await h.call('get_cache_metrics', {});
    expect(rows()[0].route).toBe('legacy');
    expect(m.indeterminate.samples).toBe(1);
  });

  it('records real runs: the mock worker through the scheduler', async () => {
    const { startSchedulerService } = await import('../../main/app.js');
    const { waitTasks } = await import('../../main/scheduler/wait.js');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await h.call('delegate_task', { objective: `q${i}`, workspace: h.repo, metadata: { mock: { usage: { input: 1000, cached: i ? 950 : 0, output: 3 } } } })).task.id);
    const svc = await startSchedulerService(h.engine);
    try {
      await waitTasks(h.engine, ids, 30_000);
    } finally {
      await svc.stop();
    }
    const m = await h.call('get_cache_metrics', {});
    expect(m.samples).toBe(3);
    expect(m.cohorts).toHaveLength(1);
    expect(m.cohorts[0]).toMatchObject({ status: 'insufficient_samples', warmSamples: 2, remainingSamples: 18, route: 'verified', worker: 'mock' });
    expect(m.overall).toMatchObject({ inputTokens: 3000, cachedTokens: 1900 });
  });

  it('checks routes', () => {
    expect(sameModel('claude-sonnet-4-5', 'claude-sonnet-4-5-20250929')).toBe(true);
    expect(sameModel('gpt-5.5', 'lightworker/gpt-5.5')).toBe(true);
    expect(sameModel('gpt-5.5', 'gpt-5.5-mini')).toBe(false);
    expect(checkRoute('codex', true, 'gpt-5.5', 'gpt-5.5')).toBe('not_exposed');
    expect(checkRoute('opencode', true, 'gpt-5.5', null)).toBe('not_exposed');
    expect(checkRoute('claude-code', true, 'claude-sonnet-4-5', null)).toBe('missing');
    expect(checkRoute('claude-code', true, 'claude-sonnet-4-5', 'claude-haiku-4-5')).toBe('mismatch');
    expect(checkRoute('mock', true, null, 'mock-model')).toBe('verified');
    expect(checkRoute('mock', false, null, 'mock-model')).toBe('legacy');
  });
});
