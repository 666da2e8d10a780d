import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSchedulerService } from '../../main/app.js';
import { parseConfig } from '../../main/core/config.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { listEvents } from '../../main/store/events.js';
import { getTask } from '../../main/store/tasks.js';
import { startGateway, type Gateway } from '../fixtures/gateway/index.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { cliUnavailable } from '../helpers/worker-cli.js';

// Budgets and rate limits with the real Codex CLI and Claude Code, through the scripted model gateway.
const KEY_ENV = 'LW_GUARDS_KEY';
const T = 240_000;
const RESULT = { summary: 'done', findings: [], escalation: null };

describe.each([
  ['codex', 'gpt-5.5'],
  ['claude-code', 'claude-sonnet-4-5'],
])('%s: budgets and rate limits (real CLI, scripted gateway)', (worker, model) => {
  let gw: Gateway;
  let h: TestHome;
  let why: string | null = null;
  const prev = process.env[KEY_ENV];
  beforeAll(async () => {
    why = await cliUnavailable(worker === 'codex' ? 'codex' : 'claude');
    process.env[KEY_ENV] = 'sk-guards-key-0000000000';
    gw = await startGateway({});
    // Refused with a 429 on every try of the first run (the CLI retries twice itself), then answered.
    gw.addScript('limited', { turns: [{ error: { status: 429, message: 'Rate limit reached for requests', times: 3, retryAfterMs: 20 }, json: RESULT }] });
    gw.addScript('answer', { turns: [{ json: RESULT }] });
    const toml = `[gateways.fake]\nbase_url = "${gw.url}/v1"\nkey_env = "${KEY_ENV}"\n[scheduler]\nkill_grace_ms = 1000\n[limits]\nretry_budget = 0\n`;
    h = makeHome({ config: parseConfig({ gateways: { fake: { base_url: `${gw.url}/v1`, key_env: KEY_ENV } } }) });
    h.configure(toml);
  });
  afterAll(async () => {
    h?.cleanup();
    await gw?.close();
    if (prev === undefined) delete process.env[KEY_ENV];
    else process.env[KEY_ENV] = prev;
  });

  it('a task over max_tokens is stopped after the usage that reached it and waits for a person', { timeout: T }, async (ctx) => {
    if (why) {
      // The CLIs are dev dependencies: under CI a missing one is a failure, not a skip.
      if (process.env.CI === 'true') throw new Error(why);
      console.warn(`skipping: ${why}`);
      ctx.skip();
    }
    const r = await h.call('delegate_task', { objective: 'Summarize README.md. [[script:answer]]', workspace: h.repo, kind: 'explore', worker, gateway: 'fake', model, budget: { max_tokens: 50 } });
    const svc = await startSchedulerService(h.engine);
    try {
      await waitTasks(h.engine, [r.task.id], 180_000);
    } finally {
      await svc.stop();
    }
    const t = getTask(h.engine.db, r.task.id)!;
    expect(t.status, JSON.stringify(t.error)).toBe('waiting_input');
    const shown = await h.call('get_task', { id: t.id });
    expect(shown.task.needs).toMatchObject({ kind: 'budget' });
    expect(shown.task.needs.asks).toMatch(/^budget of max_tokens reached: [\d,]+ of 50 tokens spent; raise it or stop$/);
    expect(shown.budget.spent.tokens).toBeGreaterThan(0);
    await h.call('answer_task', { id: t.id, decision: 'deny' });
    expect(getTask(h.engine.db, t.id)!.error?.code).toBe('budget_exceeded');
  });

  it('a 429 puts the task back in the queue as the same attempt; it completes once the provider answers, with no retry to spend', { timeout: T }, async (ctx) => {
    if (why) {
      // The CLIs are dev dependencies: under CI a missing one is a failure, not a skip.
      if (process.env.CI === 'true') throw new Error(why);
      console.warn(`skipping: ${why}`);
      ctx.skip();
    }
    const r = await h.call('delegate_task', { objective: 'Summarize README.md. [[script:limited]]', workspace: h.repo, kind: 'explore', worker, gateway: 'fake', model });
    const svc = await startSchedulerService(h.engine);
    try {
      await waitTasks(h.engine, [r.task.id], 180_000);
    } finally {
      await svc.stop();
    }
    const t = getTask(h.engine.db, r.task.id)!;
    expect(t.status, JSON.stringify(t.error)).toBe('completed');
    expect(t.attempt).toBe(1);
    const events = listEvents(h.engine.db, { taskId: t.id, limit: 10_000 }).events;
    expect(events.filter((e) => e.type === 'task.rate_limited').length).toBeGreaterThanOrEqual(1);
    expect(events.some((e) => e.type === 'task.status' && e.payload.to === 'failed')).toBe(false);
  });
});
