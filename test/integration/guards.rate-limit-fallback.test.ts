import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { gatewayKey, noteInfraFailure, pauseForRateLimit } from '../../main/scheduler/worker-pauses.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { listEvents } from '../../main/store/events.js';
import { getTask } from '../../main/store/tasks.js';
import { until } from '../helpers/budget-probe.js';
import { runCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';

/**
 * A task rate-limited on its gateway takes its model's other route ([models.routes."M"]) as the same attempt,
 * instead of waiting for the reset, when that route's gateway can run it sooner; otherwise it waits as before.
 * Codex is the scripted stand-in whose first run meets a provider 429 naming a reset 600 s away.
 */
const SCRIPTED = fileURLToPath(new URL('../fixtures/guards/scripted-codex.mjs', import.meta.url));
const MOVED = /^rate limited on gateway fake until (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d UTC; moved to fallback route other\/p-other\/gpt-5\.5$/;
const WAITS = /^gateway fake rate-limited until (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d UTC \(task \w+, the reset its CLI named\); every task routed to it waits$/;

let h: TestHome;
let svc: SchedulerService | null = null;
afterEach(async () => {
  await svc?.stop();
  svc = null;
  h?.cleanup();
});

function setUp(): void {
  h = makeHome();
  const gw = (name: string) => `[gateways.${name}]\nbase_url = "http://127.0.0.1:9/v1"\nkey_env = "LW_TEST_${name.toUpperCase()}_GATEWAY_KEY"\n`;
  h.configure(
    `${gw('fake')}${gw('other')}` +
      '[models.routes."gpt-5.5"]\nprimary = { gateway = "fake", model = "p-fake/gpt-5.5" }\nfallback = { gateway = "other", model = "p-other/gpt-5.5" }\n' +
      `[workers.codex]\ncommand = ["node", ${JSON.stringify(SCRIPTED)}, "limited", ${JSON.stringify(join(h.root, 'limited'))}, "1", "600"]\nauth = "none"\nmax_concurrency = 1\n[limits]\nretry_budget = 0\n`,
  );
}

const submit = async (input: Record<string, unknown>) => (await h.call('delegate_task', { kind: 'explore', workspace: h.repo, worker: 'codex', ...input })).task;
const eventsOf = (id: string, type: string) => listEvents(h.engine.db, { taskId: id, limit: 1000 }).events.filter((e) => e.type === type);

/** Starts the scheduler and returns once `id` met its rate limit and is back in the queue (or moved on). */
async function meetLimit(id: string): Promise<void> {
  svc = await startSchedulerService(h.engine);
  await until('the task back in the queue for its rate limit', () => eventsOf(id, 'task.rate_limited').length > 0);
}

describe('a rate limit on a task with a fallback route', () => {
  it('moves the task to its fallback route as the same attempt: it completes there, no retry spent, its dependent runs; show and get_task say so', async () => {
    setUp();
    const t = await submit({ objective: 'limited on fake', model: 'gpt-5.5' });
    expect(t.gateway).toBe('fake');
    const dependent = (await h.call('delegate_task', { objective: 'after it', kind: 'explore', workspace: h.repo, worker: 'mock', depends_on: [t.id] })).task;
    // One codex at a time: this one is still queued for gateway fake when the first meets the limit.
    const next = await submit({ objective: 'queued behind it', model: 'gpt-5.5' });
    await meetLimit(t.id);
    expect((await waitTasks(h.engine, [t.id, dependent.id, next.id], 60_000)).reason).toBe('settled');
    expect(getTask(h.engine.db, next.id)).toMatchObject({ status: 'completed', attempt: 1, gateway: 'other' });
    expect(eventsOf(next.id, 'task.rate_limited')).toEqual([]);
    expect((await h.call('get_task', { id: next.id })).task.rerouted).toMatch(MOVED);
    expect(eventsOf(next.id, 'task.route').map((e) => e.payload.gateway)).toEqual(['other']);
    const done = getTask(h.engine.db, t.id)!;
    expect({ status: done.status, attempt: done.attempt, gateway: done.gateway }).toEqual({ status: 'completed', attempt: 1, gateway: 'other' });
    expect(getTask(h.engine.db, dependent.id)!.status).toBe('completed');
    const [moved] = eventsOf(t.id, 'task.rerouted');
    expect(moved.payload).toMatchObject({ attempt: 1, from: 'fake', to: 'other', model: 'p-other/gpt-5.5', route: 'fallback', message: expect.stringMatching(MOVED) });
    // The run after the move went through the other gateway, by the provider's name for the model there.
    const routes = eventsOf(t.id, 'task.route').map((e) => `${e.payload.gateway} ${e.payload.providerModel}`);
    expect(routes).toEqual(['fake p-fake/gpt-5.5', 'other p-other/gpt-5.5']);
    const shown = await h.call('get_task', { id: t.id });
    expect(shown.task.rerouted).toMatch(MOVED);
    const cli = await runCli(['show', t.id], { home: h.home });
    expect(cli.stdout).toMatch(/^rerouted: {3}rate limited on gateway fake until .*; moved to fallback route other\/p-other\/gpt-5\.5$/m);
    expect(cli.stdout).toMatch(/gateway: other/);
    // The gateway it left is still paused for everyone else.
    expect((await h.call('list_workers')).gateways).toEqual([{ name: 'fake', paused: expect.stringMatching(/^gateway fake rate-limited until/) }]);
    expect(eventsOf(t.id, 'task.status').some((e) => e.payload.to === 'failed')).toBe(false);
  });

  it('without a fallback route the task waits for the reset, as before', async () => {
    setUp();
    const t = await submit({ objective: 'limited on fake, no other route', model: 'gpt-5.5-mini', gateway: 'fake' });
    await meetLimit(t.id);
    const shown = (await h.call('get_task', { id: t.id })).task;
    expect(shown).toMatchObject({ status: 'queued', attempt: 1, gateway: 'fake', waitingFor: expect.stringMatching(WAITS) });
    expect(shown.rerouted).toBeUndefined();
    expect(eventsOf(t.id, 'task.rerouted')).toEqual([]);
  });

  it('stays when the fallback gateway resets later; moves when it resets earlier, and waits there for that reset', async () => {
    setUp();
    const pauseOther = (inMs: number) => h.engine.write(() => pauseForRateLimit(h.engine.db, gatewayKey('other'), 'x', Date.now() + inMs));
    pauseOther(3_600_000);
    const stays = await submit({ objective: 'the other resets later', model: 'gpt-5.5' });
    await meetLimit(stays.id);
    expect((await h.call('get_task', { id: stays.id })).task).toMatchObject({ status: 'queued', gateway: 'fake', waitingFor: expect.stringMatching(WAITS) });
    expect(eventsOf(stays.id, 'task.rerouted')).toEqual([]);
    await svc!.stop();
    svc = null;
    h.cleanup();

    setUp();
    pauseOther(60_000);
    const moves = await submit({ objective: 'the other resets earlier', model: 'gpt-5.5' });
    await meetLimit(moves.id);
    const shown = (await h.call('get_task', { id: moves.id })).task;
    expect(shown).toMatchObject({ status: 'queued', attempt: 1, gateway: 'other', waitingFor: expect.stringMatching(/^gateway other rate-limited until/) });
    expect(shown.rerouted).toMatch(/; moved to fallback route other\/p-other\/gpt-5\.5 \(itself rate-limited until (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d UTC, the earlier reset\)$/);
  });

  it('stays when the fallback gateway has an open breaker', async () => {
    setUp();
    h.engine.write(() => {
      for (let i = 0; i < h.engine.config.breaker.failures; i++) noteInfraFailure(h.engine.db, h.engine.config, gatewayKey('other'), '503 from other');
    });
    const t = await submit({ objective: 'the other is broken', model: 'gpt-5.5' });
    await meetLimit(t.id);
    expect((await h.call('get_task', { id: t.id })).task).toMatchObject({ status: 'queued', gateway: 'fake', waitingFor: expect.stringMatching(WAITS) });
    expect(eventsOf(t.id, 'task.rerouted')).toEqual([]);
  });
});
