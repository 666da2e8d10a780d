import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { getTask } from '../../main/store/tasks.js';
import { breakerOf } from '../../main/scheduler/worker-pauses.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { until } from '../helpers/budget-probe.js';

const SCRIPTED = fileURLToPath(new URL('../fixtures/guards/scripted-codex.mjs', import.meta.url));

let h: TestHome;
let svc: SchedulerService | null = null;
afterEach(async () => {
  await svc?.stop();
  svc = null;
  h?.cleanup();
});

describe('a circuit breaker per worker', () => {
  it('opens after N infrastructure failures in a row, says so, lets one probe through after a growing cool-down, and closes on its success', async () => {
    h = makeHome();
    const broken = join(h.root, 'broken');
    writeFileSync(broken, '');
    // Crashes (503, no JSON) while `broken` exists; three in a row open the breaker for 2 s, then 4 s.
    h.configure(`[workers.codex]\ncommand = ["node", ${JSON.stringify(SCRIPTED)}, "flap", ${JSON.stringify(broken)}]\nauth = "none"\nmax_concurrency = 3\n[breaker]\nfailures = 3\ncooldown_s = 2\n`);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push((await h.call('delegate_task', { objective: `t${i}`, kind: 'explore', workspace: h.repo, worker: 'codex' })).task.id);
    // `closed`: the breaker was closed when the task was claimed (a probe's successful turn closes it).
    const starts: { id: string; at: number; closed: boolean }[] = [];
    const ends: { id: string; at: number; to: string }[] = [];
    // The first probe (the first start well after the third failure) fails; as it ends the worker is
    // "repaired" (in this listener, so whatever a test step costs, the next probe finds it repaired).
    let firstProbe: string | null = null;
    h.engine.events.on('event', (e) => {
      if (e.type !== 'task.status' || !e.taskId) return;
      if (e.payload.to === 'starting') {
        starts.push({ id: e.taskId, at: e.ts, closed: breakerOf(h.engine.db, 'codex') === null });
        if (!firstProbe && ends.length >= 3 && e.ts >= ends[2].at + 1500) firstProbe = e.taskId;
      }
      if (['failed', 'completed'].includes(String(e.payload.to))) {
        ends.push({ id: e.taskId, at: e.ts, to: String(e.payload.to) });
        if (e.taskId === firstProbe) rmSync(broken, { force: true });
      }
    });
    const endOf = (id: string) => ends.find((e) => e.id === id);
    svc = await startSchedulerService(h.engine);

    // Open: the queued tasks, `workers` and `doctor` say why.
    const waiting = await until('the breaker to open', async () => {
      const queued = ids.map((id) => getTask(h.engine.db, id)!).find((t) => t.status === 'queued');
      const shown = queued && (await h.call('get_task', { id: queued.id })).task;
      return shown?.waitingFor ? shown : null;
    });
    const opened = ends[2].at;
    expect(waiting.waitingFor).toMatch(/^worker codex paused: \d failures in a row \(last: .*503 Service Unavailable.*\); retrying at \d{4}-\d\d-\d\dT[\d:]+Z$/);
    // What was already running when it opened ends too (failed); then nothing starts until the cool-down ends.
    const before = starts.filter((s) => s.at <= opened).length;
    const probe1 = await until('the first probe to end', () => {
      const p = starts[before];
      return p && endOf(p.id) ? p : null;
    });
    expect(probe1.at - opened).toBeGreaterThanOrEqual(2000);
    expect(endOf(probe1.id)!.to).toBe('failed');
    // The probe ran alone (three slots, one claim).
    expect(starts.filter((s) => s.at >= probe1.at && s.at <= endOf(probe1.id)!.at)).toHaveLength(1);

    // Repaired: the next probe (after a doubled cool-down) succeeds and closes the breaker; the rest run.
    expect(probe1.id).toBe(firstProbe);
    const done = await waitTasks(h.engine, ids, 60_000);
    expect(done.reason).toBe('settled');
    const probe2 = starts[before + 1];
    expect(probe2.at - endOf(probe1.id)!.at).toBeGreaterThanOrEqual(4000);
    expect(endOf(probe2.id)!.to).toBe('completed');
    // Alone until its turn succeeded: that closes the breaker (the worker works again), and the queue runs on
    // while the probe's own verification and end are still being written.
    expect(probe2.closed).toBe(false);
    expect(starts.filter((s) => s.id !== probe2.id && s.at >= probe2.at && s.at < endOf(probe2.id)!.at && !s.closed)).toEqual([]);
    const failed = ends.filter((e) => e.to === 'failed');
    expect(failed).toHaveLength(before + 1);
    for (const f of failed) expect(getTask(h.engine.db, f.id)!.error?.code).toBe('worker_failed');
    expect(ids.filter((id) => getTask(h.engine.db, id)!.status === 'completed')).toHaveLength(10 - before - 1);
    // Closed again: nothing says paused.
    expect((await h.call('list_workers')).workers.find((w: { name: string }) => w.name === 'codex').paused).toBeNull();
  });

  it('says so in workers and doctor while it is open', async () => {
    h = makeHome();
    const broken = join(h.root, 'broken');
    writeFileSync(broken, '');
    h.configure(`[workers.codex]\ncommand = ["node", ${JSON.stringify(SCRIPTED)}, "flap", ${JSON.stringify(broken)}]\nauth = "none"\nmax_concurrency = 1\n[breaker]\nfailures = 2\ncooldown_s = 600\n`);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await h.call('delegate_task', { objective: `d${i}`, kind: 'explore', workspace: h.repo, worker: 'codex' })).task.id);
    svc = await startSchedulerService(h.engine);
    await until('two failures', () => ids.filter((id) => getTask(h.engine.db, id)!.status === 'failed').length === 2);
    const paused = /^worker codex paused: 2 failures in a row \(last: codex exited with code 1: ERROR: stream error: 503 Service Unavailable.*\); retrying at \S+Z$/;
    expect((await h.call('list_workers')).workers.find((w: { name: string }) => w.name === 'codex').paused).toMatch(paused);
    const doctor = (await h.call('run_doctor')).checks.find((c: { name: string }) => c.name === 'worker codex');
    expect(doctor).toMatchObject({ ok: false, optional: true });
    expect(doctor.detail).toMatch(paused);
    expect((await h.call('get_task', { id: ids[2] })).task).toMatchObject({ status: 'queued', waitingFor: expect.stringMatching(paused) });
  });

  it('does not count verification failures', async () => {
    h = makeHome();
    h.configure(`[workers.codex]\ncommand = ["node", ${JSON.stringify(SCRIPTED)}, "ok"]\nauth = "none"\n[breaker]\nfailures = 2\n[verify]\nauto_repair = 0\n`);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await h.call('delegate_task', { objective: `v${i}`, kind: 'explore', workspace: h.repo, worker: 'codex', verify: ['false'] })).task.id);
    svc = await startSchedulerService(h.engine);
    await waitTasks(h.engine, ids, 60_000);
    expect(ids.map((id) => getTask(h.engine.db, id)!.error?.code)).toEqual(Array(4).fill('verification_failed'));
    expect((await h.call('list_workers')).workers.find((w: { name: string }) => w.name === 'codex').paused).toBeNull();
  });
});
