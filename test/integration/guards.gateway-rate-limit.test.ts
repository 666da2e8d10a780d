import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { listEvents } from '../../main/store/events.js';
import { getTask } from '../../main/store/tasks.js';
import { until } from '../helpers/budget-probe.js';
import { makeHome, type TestHome } from '../helpers/env.js';

const SCRIPTED = fileURLToPath(new URL('../fixtures/guards/scripted-codex.mjs', import.meta.url));
const LIMITED = /^gateway fake rate-limited until (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d UTC \(task \w+, the reset its CLI named\); every task routed to it waits$/;

let h: TestHome;
let svc: SchedulerService | null = null;
afterEach(async () => {
  await svc?.stop();
  svc = null;
  h?.cleanup();
});

/**
 * Two gateways, and a codex whose first run is refused with a provider 429 naming a reset `resetS` seconds
 * away (later runs succeed). A task by codex through gateway `fake` meets it; returns once it is back in the
 * queue, with the `until` its event says.
 */
async function limitedThroughFake(resetS: number): Promise<{ first: string; until: number; via: (worker: string, n: string, gateway?: string) => Promise<string> }> {
  h = makeHome();
  const state = join(h.root, 'limited');
  const gw = (name: string) => `[gateways.${name}]\nbase_url = "http://127.0.0.1:9/v1"\nkey_env = "LW_TEST_${name.toUpperCase()}_GATEWAY_KEY"\n`;
  h.configure(`${gw('fake')}${gw('other')}[workers.codex]\ncommand = ["node", ${JSON.stringify(SCRIPTED)}, "limited", ${JSON.stringify(state)}, "1", "${resetS}"]\nauth = "none"\nmax_concurrency = 3\n[limits]\nretry_budget = 0\n`);
  const via = async (worker: string, n: string, gateway?: string) =>
    (await h.call('delegate_task', { objective: n, kind: 'explore', workspace: h.repo, worker, ...(gateway ? { gateway } : {}) })).task.id as string;
  const first = await via('codex', 'limited first', 'fake');
  svc = await startSchedulerService(h.engine);
  const limited = await until('the first task back in the queue for a rate limit', () => {
    const e = listEvents(h.engine.db, { taskId: first, limit: 100 }).events.find((x) => x.type === 'task.rate_limited');
    return e && getTask(h.engine.db, first)!.status === 'queued' ? e : null;
  });
  expect(limited.payload).toMatchObject({ worker: 'codex', gateway: 'fake' });
  return { first, until: Number(limited.payload.until), via };
}

describe('a rate limit met through a gateway', () => {
  it('pauses that gateway: every task routed to it waits, whichever worker; the same worker on another gateway runs; workers/doctor say so', async () => {
    const { first, via } = await limitedThroughFake(600);
    const starts = new Set<string>();
    h.engine.events.on('event', (e) => {
      if (e.type === 'task.status' && e.taskId && e.payload.to === 'starting') starts.add(e.taskId);
    });
    // Another worker routed to the same gateway waits; the same worker through another gateway, and a task
    // through no gateway, run meanwhile.
    const held = await via('mock', 'same gateway, other worker', 'fake');
    const elsewhere = await via('codex', 'same worker, other gateway', 'other');
    const direct = await via('mock', 'no gateway');
    // (Bounded well inside the test's time: a held task says so as `queued`, not as a timeout.)
    await waitTasks(h.engine, [elsewhere, direct], 30_000);
    expect({ elsewhere: getTask(h.engine.db, elsewhere)!.status, direct: getTask(h.engine.db, direct)!.status }).toEqual({ elsewhere: 'completed', direct: 'completed' });

    expect(starts.has(held)).toBe(false);
    for (const id of [first, held]) expect((await h.call('get_task', { id })).task).toMatchObject({ status: 'queued', waitingFor: expect.stringMatching(LIMITED) });
    const listed = await h.call('list_workers');
    expect(listed.gateways).toEqual([{ name: 'fake', paused: expect.stringMatching(LIMITED) }]);
    // The worker itself is not paused: the limit was the gateway's provider's.
    expect(listed.workers.find((w: { name: string }) => w.name === 'codex').paused).toBeNull();
    const checks = (await h.call('run_doctor')).checks as { name: string }[];
    expect(checks.find((c) => c.name === 'gateway fake')).toMatchObject({ ok: false, optional: true, detail: expect.stringMatching(LIMITED) });
    expect(checks.find((c) => c.name === 'gateway other')).not.toMatchObject({ detail: expect.stringMatching(/rate-limited/) });
    expect(getTask(h.engine.db, first)!.attempt).toBe(1);
  });

  it('lets the tasks routed to it start only after the reset, and the limited task completes as the same attempt', async () => {
    const { first, until: reset, via } = await limitedThroughFake(2);
    const starts = new Map<string, number>();
    h.engine.events.on('event', (e) => {
      if (e.type === 'task.status' && e.taskId && e.payload.to === 'starting' && !starts.has(e.taskId)) starts.set(e.taskId, e.ts);
    });
    const other = await via('mock', 'same gateway, other worker', 'fake');
    expect((await waitTasks(h.engine, [first, other], 60_000)).reason).toBe('settled');
    expect([getTask(h.engine.db, first)!.status, getTask(h.engine.db, other)!.status]).toEqual(['completed', 'completed']);
    expect(getTask(h.engine.db, first)!.attempt).toBe(1);
    for (const id of [first, other]) expect(starts.get(id)!).toBeGreaterThanOrEqual(reset);
    expect((await h.call('list_workers')).gateways).toEqual([]);
  });
});
