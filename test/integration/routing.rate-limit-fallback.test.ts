import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { listEvents } from '../../main/store/events.js';
import { getTask } from '../../main/store/tasks.js';
import { until } from '../helpers/budget-probe.js';
import { startGateway, type Gateway } from '../fixtures/gateway/index.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { cliUnavailable } from '../helpers/worker-cli.js';

/**
 * The rate-limit pause uses the seed's model routes: gateway a answers every request with a 429 naming a
 * reset ten minutes away; a task whose model has a fallback route through gateway b moves there as the same
 * attempt and completes (real Codex and Claude Code), while a task whose model has no other route waits for
 * the reset. Where each request landed is read from the gateways' own request logs.
 */
const KEY_A = 'LW_RL_ROUTES_KEY_A';
const KEY_B = 'LW_RL_ROUTES_KEY_B';
const ANSWER = { turns: [{ json: { summary: 'Looked around.', findings: ['README.md:1 has a title'] } }] };

let a: Gateway;
let b: Gateway;
let h: TestHome;
let svc: SchedulerService | null = null;
let why: string | null = null;

beforeAll(async () => {
  why = (await cliUnavailable('codex')) ?? (await cliUnavailable('claude'));
  [a, b] = await Promise.all([startGateway({ script: ANSWER }), startGateway({ script: ANSWER })]);
  a.addScript('limited', { turns: [{ error: { status: 429, message: 'Rate limit reached for requests. Please try again in 10m0s.', times: 100_000, retryAfterMs: 20 } }] });
  b.addScript('limited', ANSWER);
  process.env[KEY_A] = 'rl-routes-key-a';
  process.env[KEY_B] = 'rl-routes-key-b';
  h = makeHome();
  h.configure(
    [
      `[gateways.a]\nbase_url = "${a.url}/v1"\nkey_env = "${KEY_A}"`,
      `[gateways.b]\nbase_url = "${b.url}/v1"\nkey_env = "${KEY_B}"`,
      '[models.routes."gpt-5.5"]\nprimary = { gateway = "a", model = "provider-a/gpt-5.5" }\nfallback = { gateway = "b", model = "provider-b/gpt-5.5" }',
      '[models.routes."claude-sonnet-4-5"]\nprimary = { gateway = "a" }\nfallback = { gateway = "b", model = "provider-b/sonnet" }',
      '[scheduler]\nkill_grace_ms = 500\nmax_concurrency = 3',
      '[workers.codex]\nmax_concurrency = 3',
      '[limits]\nretry_budget = 0',
    ].join('\n'),
  );
});

afterAll(async () => {
  await svc?.stop();
  h?.cleanup();
  await Promise.all([a?.close(), b?.close()]);
  delete process.env[KEY_A];
  delete process.env[KEY_B];
});

const modelsSeen = (gw: Gateway) => gw.requests.filter((q) => q.summary && q.summary.toolCount > 0).map((q) => `${q.api} ${q.summary!.model}`);
const eventsOf = (id: string, type: string) => listEvents(h.engine.db, { taskId: id, limit: 10_000 }).events.filter((e) => e.type === type);

describe('a rate limit on the primary route, with the real CLIs and two gateways', () => {
  it('moves codex and claude-code tasks to the fallback route as the same attempt; a model without one waits for the reset', { timeout: 600_000 }, async (ctx) => {
    if (why) {
      if (process.env.CI === 'true') throw new Error(why);
      console.warn(`skipping the rate-limit fallback route: ${why}`);
      ctx.skip();
    }
    const task = async (input: Record<string, unknown>) => (await h.call('delegate_task', { kind: 'explore', workspace: h.repo, ...input })).task;
    const codex = await task({ objective: 'a look with gpt-5.5 [[script:limited]]', worker: 'codex', model: 'gpt-5.5' });
    const claude = await task({ objective: 'a look with sonnet [[script:limited]]', worker: 'claude-code', model: 'claude-sonnet-4-5' });
    const stuck = await task({ objective: 'a look with the mini model [[script:limited]]', worker: 'codex', model: 'gpt-5.5-mini', gateway: 'a' });
    expect([codex.gateway, claude.gateway, stuck.gateway]).toEqual(['a', 'a', 'a']);

    svc = await startSchedulerService(h.engine);
    const r = await waitTasks(h.engine, [codex.id, claude.id], 240_000);
    const ended = (t: { name: string; status: string; attempt: number; gateway: string | null; error?: unknown }) => `${t.name}: ${t.status} attempt ${t.attempt} via ${t.gateway}${t.error ? ` ${JSON.stringify(t.error)}` : ''}`;
    expect(r.tasks.map((t) => ended(getTask(h.engine.db, t.id)!))).toEqual([`${codex.name}: completed attempt 1 via b`, `${claude.name}: completed attempt 1 via b`]);
    for (const id of [codex.id, claude.id]) {
      const shown = await h.call('get_task', { id });
      expect(shown.task.rerouted).toMatch(/^rate limited on gateway a until (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d UTC; moved to fallback route b\/provider-b\/(gpt-5\.5|sonnet)$/);
      expect(eventsOf(id, 'task.status').some((e) => e.payload.to === 'failed')).toBe(false);
    }
    // Both met the 429 on a under the provider's name there, then ran on b under b's.
    expect(modelsSeen(a)).toEqual(expect.arrayContaining(['responses provider-a/gpt-5.5', 'messages claude-sonnet-4-5']));
    expect(modelsSeen(b)).toEqual(expect.arrayContaining(['responses provider-b/gpt-5.5', 'messages provider-b/sonnet']));

    // No other route for gpt-5.5-mini: it waits in the queue for a's reset, the same attempt, nothing spent.
    await until('the mini task back in the queue for its rate limit', () => eventsOf(stuck.id, 'task.rate_limited').length > 0 && getTask(h.engine.db, stuck.id)!.status === 'queued', 300_000);
    const waiting = (await h.call('get_task', { id: stuck.id })).task;
    expect(waiting).toMatchObject({ status: 'queued', attempt: 1, gateway: 'a', waitingFor: expect.stringMatching(/^gateway a rate-limited until (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d UTC/) });
    expect(waiting.rerouted).toBeUndefined();
    expect(modelsSeen(b).filter((m) => m.includes('mini'))).toEqual([]);
  });
});
