import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { getTask } from '../../main/store/tasks.js';
import { makeHome, type TestHome } from '../helpers/env.js';

const SCRIPTED = fileURLToPath(new URL('../fixtures/guards/scripted-codex.mjs', import.meta.url));
const PAUSED = /^gateway fake paused: 3 failures in a row \(last: .*503 Service Unavailable.*\); retrying at \S+Z$/;

let h: TestHome;
let svc: SchedulerService | null = null;
afterEach(async () => {
  await svc?.stop();
  svc = null;
  h?.cleanup();
});

/**
 * A home where codex and claude-code both crash with a 503 while the file `broken` exists (their gateway
 * "down"), and three tasks through gateway `fake` (two by codex, one by claude-code) have failed so: three
 * in a row for the gateway, fewer for each worker. The same [breaker] settings apply to gateways.
 */
async function gatewayDown(cooldownS: number): Promise<{ broken: string; via: (worker: string, n: string) => Promise<string> }> {
  h = makeHome();
  const broken = join(h.root, 'broken');
  writeFileSync(broken, '');
  const flap = `command = ["node", ${JSON.stringify(SCRIPTED)}, "flap", ${JSON.stringify(broken)}]\nauth = "none"\nmax_concurrency = 3\n`;
  h.configure(`[gateways.fake]\nbase_url = "http://127.0.0.1:9/v1"\nkey_env = "LW_TEST_FAKE_GATEWAY_KEY"\n[workers.codex]\n${flap}[workers.claude-code]\n${flap}[breaker]\nfailures = 3\ncooldown_s = ${cooldownS}\n`);
  const via = async (worker: string, n: string) => (await h.call('delegate_task', { objective: n, kind: 'explore', workspace: h.repo, worker, gateway: 'fake' })).task.id as string;
  const first = [await via('codex', 'a'), await via('codex', 'b'), await via('claude-code', 'c')];
  svc = await startSchedulerService(h.engine);
  await waitTasks(h.engine, first, 60_000);
  expect(first.map((id) => getTask(h.engine.db, id)!.status)).toEqual(['failed', 'failed', 'failed']);
  return { broken, via };
}

describe('a circuit breaker per gateway', () => {
  it('opens on faults met through one gateway by different workers, holds only the tasks routed to it, and workers/doctor say so', async () => {
    const { via } = await gatewayDown(600);
    const later = [await via('codex', 'd'), await via('claude-code', 'e')];
    // A task of another route runs meanwhile.
    const other = (await h.call('delegate_task', { objective: 'mock', kind: 'explore', workspace: h.repo })).task.id;
    await waitTasks(h.engine, [other], 60_000);
    expect(getTask(h.engine.db, other)!.status).toBe('completed');
    for (const id of later) expect((await h.call('get_task', { id })).task).toMatchObject({ status: 'queued', waitingFor: expect.stringMatching(PAUSED) });

    const listed = await h.call('list_workers');
    expect(listed.gateways).toEqual([{ name: 'fake', paused: expect.stringMatching(PAUSED) }]);
    // Neither worker's own breaker opened: the faults were the gateway's.
    expect(listed.workers.find((w: { name: string }) => w.name === 'codex').paused).toBeNull();
    expect(listed.workers.find((w: { name: string }) => w.name === 'claude-code').paused).toBeNull();
    const doctor = (await h.call('run_doctor')).checks.find((c: { name: string }) => c.name === 'gateway fake');
    expect(doctor).toMatchObject({ ok: false, optional: true, detail: expect.stringMatching(PAUSED) });
  });

  it('lets one probe through after the cool-down; its success closes the breaker and the rest follow', async () => {
    const { broken, via } = await gatewayDown(3);
    const starts = new Map<string, number>();
    const ends = new Map<string, number>();
    h.engine.events.on('event', (e) => {
      if (e.type !== 'task.status' || !e.taskId) return;
      if (e.payload.to === 'starting') starts.set(e.taskId, e.ts);
      if (['failed', 'completed'].includes(String(e.payload.to))) ends.set(e.taskId, e.ts);
    });
    // (codex only: the script's success speaks codex's JSON, which claude-code's parser does not read.)
    const later = [await via('codex', 'd'), await via('codex', 'e'), await via('codex', 'f')];
    const waiting = (await h.call('get_task', { id: later[0] })).task.waitingFor as string;
    expect(waiting).toMatch(PAUSED);
    const retryAt = Date.parse(/retrying at (\S+Z)$/.exec(waiting)![1]);
    rmSync(broken);
    expect((await waitTasks(h.engine, later, 60_000)).reason).toBe('settled');
    expect(later.map((id) => getTask(h.engine.db, id)!.status)).toEqual(['completed', 'completed', 'completed']);
    // The probe ran alone: nothing else through the gateway started before it ended.
    const order = [...later].sort((x, y) => starts.get(x)! - starts.get(y)!);
    expect(starts.get(order[0])!).toBeGreaterThanOrEqual(retryAt);
    for (const id of order.slice(1)) expect(starts.get(id)!).toBeGreaterThanOrEqual(ends.get(order[0])!);
    expect((await h.call('get_task', { id: later[0] })).task.waitingFor).toBeUndefined();
  });
});
