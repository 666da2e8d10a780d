import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../main/core/config.js';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { canonicalPrompt } from '../fixtures/gateway/cache.js';
import { startGateway, type Gateway } from '../fixtures/gateway/index.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { cliUnavailable } from '../helpers/worker-cli.js';

const KEY_ENV = 'LW_CACHELAB_GATEWAY_KEY';
const TASKS = 30;

/**
 * End to end: 30 explore tasks of one cohort (same worker, route, gateway, protocol, pack) run by the
 * in-process scheduler through the REAL Codex CLI against the scripted gateway, whose prefix-cache
 * simulation reports cached tokens. get_cache_metrics must measure the cohort (≥ 20 warm samples at
 * ≥ 90 %) but not certify it: route `not_exposed` (codex never reports its model), `unverified_route`, and said so.
 */
describe('Cache Lab end to end with the real Codex CLI', () => {
  let gw: Gateway;
  let h: TestHome;
  let svc: SchedulerService | null = null;
  let why: string | null = null;
  beforeAll(async () => {
    why = await cliUnavailable('codex');
    gw = await startGateway({ keepBodies: true, script: { turns: [{ json: { summary: 'Looked around.', findings: ['README.md:1 has a title'] } }] } });
    const raw = { gateways: { fake: { base_url: `${gw.url}/v1`, key_env: KEY_ENV } }, scheduler: { max_concurrency: 3 } };
    h = makeHome({ config: parseConfig(raw) });
    process.env[KEY_ENV] = 'gw-test-key-cachelab';
  });
  afterAll(async () => {
    await svc?.stop();
    h?.cleanup();
    await gw?.close();
    delete process.env[KEY_ENV];
  });

  it(`${TASKS} codex tasks in one cohort are measured warm but not certified (codex never says its model)`, { timeout: 600_000 }, async (ctx) => {
    if (why) {
      console.warn(`skipping the Cache Lab codex end to end: ${why}`);
      ctx.skip();
    }
    await h.call('add_context_pack', { name: 'house', version: '1', text: 'House rules: keep answers short.\nThe repository is a demo.\n' });
    const ids: string[] = [];
    for (let i = 0; i < TASKS; i++) {
      const { task } = await h.call('delegate_task', {
        objective: `Question ${i + 1}: what does README.md say about topic #${i + 1}?`, kind: 'explore', workspace: h.repo,
        worker: 'codex', gateway: 'fake', model: 'gpt-5.5', reasoning_effort: 'low', context_pack: 'house',
      });
      ids.push(task.id);
    }
    const tasks = await Promise.all(ids.map(async (id) => (await h.call('get_task', { id })).task));
    expect(new Set(tasks.map((t) => t.contextPack))).toEqual(new Set(['house@1']));

    svc = await startSchedulerService(h.engine);
    const r = await waitTasks(h.engine, ids, 540_000);
    const failed = r.tasks.filter((t) => t.status !== 'completed').map((t) => `${t.id} ${t.status} ${JSON.stringify(t.error)}`);
    expect(failed, failed.join('\n')).toEqual([]);

    const m = await h.call('get_cache_metrics', {});
    expect(m.samples).toBe(TASKS);
    expect(m.cohorts).toHaveLength(1);
    const c = m.cohorts[0];
    expect(c.warmSamples).toBe(TASKS - 1);
    expect(c.route).toBe('not_exposed');
    expect(c.note).toMatch(/codex never reports the model/);
    expect(m.cold.samples).toBe(1);
    // Not compared with the cold sample: three tasks start at once, so the sample recorded first (cold)
    // may have been served after another task's request warmed the gateway's cache.
    expect(m.warm.hitRate).toBeGreaterThanOrEqual(0.9);
    expect(m.series.length).toBeGreaterThan(0);

    // Every first turn carried the same stable prefix (hashes only in the event, never the text).
    const { events } = await h.call('get_events', { types: ['worker.prompt'], limit: 1000 });
    const prompts = events.filter((e: { type: string }) => e.type === 'worker.prompt');
    expect(prompts).toHaveLength(TASKS);
    expect(new Set(prompts.map((e: { payload: { stableHash: string } }) => e.payload.stableHash)).size).toBe(1);
    expect(new Set(prompts.map((e: { payload: { promptHash: string } }) => e.payload.promptHash)).size).toBe(TASKS);
    expect(JSON.stringify(prompts)).not.toContain('House rules');
    // The worker got the pack text in its prompt.
    const bodies = gw.requests.filter((q) => q.api === 'responses' && q.summary && !q.summary.side).map((q) => canonicalPrompt('responses', q.body as Record<string, unknown>));
    expect(bodies.length).toBeGreaterThanOrEqual(TASKS);
    expect(bodies.every((b) => b.includes('House rules: keep answers short.'))).toBe(true);

    // Certification needs the bytes before our prompt to be identical across tasks: no per-request
    // item ids in what the cache hashes, no per-attempt CODEX_HOME path (skills roots) in the request,
    // and every first turn shares one prefix through the end of our stable part (the pack is its end).
    expect(bodies.filter((b) => /"id":"msg_/.test(b))).toEqual([]);
    const raw = gw.requests.filter((q) => q.api === 'responses').map((q) => JSON.stringify(q.body));
    expect(raw.filter((b) => /codex-home/.test(b))).toEqual([]);
    const firsts = bodies.filter((b) => b.includes('[lw-prompt/') && !b.includes('"role":"assistant"'));
    expect(firsts.length).toBeGreaterThanOrEqual(TASKS);
    let shared = firsts[0].length;
    for (const b of firsts.slice(1)) {
      let i = 0;
      while (i < shared && b.charCodeAt(i) === firsts[0].charCodeAt(i)) i++;
      shared = i;
    }
    expect(firsts[0].slice(0, shared)).toContain('The repository is a demo.');
    const rate = `warm hit rate ${(c.hitRate * 100).toFixed(1)}%, ${c.warmSamples} warm samples`;
    expect(c.status, `${rate}: ${JSON.stringify(c)}`).toBe('unverified_route');
    expect(c.hitRate, rate).toBeGreaterThanOrEqual(0.9);
    expect(m.target).toMatchObject({ status: 'unverified_route' });
  });
});
