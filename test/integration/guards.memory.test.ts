import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { MEMINFO_ENV } from '../../main/platform/proc/memory.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { getTask } from '../../main/store/tasks.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { until } from '../helpers/budget-probe.js';

const SCRIPTED = fileURLToPath(new URL('../fixtures/guards/scripted-codex.mjs', import.meta.url));
const HOG_MIB = 150;

let h: TestHome;
let svc: SchedulerService | null = null;
const before = process.env[MEMINFO_ENV];
afterEach(async () => {
  await svc?.stop();
  svc = null;
  h?.cleanup();
  if (before === undefined) delete process.env[MEMINFO_ENV];
  else process.env[MEMINFO_ENV] = before;
});

/** Play a machine with `mib` MiB available (the leader reads this file instead of /proc/meminfo). */
function setFree(file: string, mib: number): void {
  writeFileSync(file, `MemTotal:       99999999 kB\nMemFree:        1000 kB\nMemAvailable:   ${mib * 1024} kB\n`);
}

describe('memory-aware admission', () => {
  it("measures a worker's footprint, holds its next task while memory is short (saying why) and starts it when memory is back", async () => {
    h = makeHome();
    const meminfo = join(h.root, 'meminfo');
    const pids = join(h.root, 'hog.pids');
    process.env[MEMINFO_ENV] = meminfo;
    setFree(meminfo, 100_000);
    // Each run holds 150 MiB for 2.5 s: the leader samples its tree each second.
    h.configure(`[workers.codex]\ncommand = ["node", ${JSON.stringify(SCRIPTED)}, "hog", "${HOG_MIB}", "2500", ${JSON.stringify(pids)}]\nauth = "none"\n[scheduler]\nmin_free_mib = 512\n`);
    const first = (await h.call('delegate_task', { objective: 'measure', kind: 'explore', workspace: h.repo, worker: 'codex' })).task.id;
    svc = await startSchedulerService(h.engine);
    await waitTasks(h.engine, [first], 60_000);
    expect(getTask(h.engine.db, first)!.status).toBe('completed');

    // Short: 512 reserved plus the measured footprint does not fit in 600 MiB.
    setFree(meminfo, 600);
    const next = (await h.call('delegate_task', { objective: 'wait', kind: 'explore', workspace: h.repo, worker: 'codex' })).task.id;
    const shown = await until('the memory wait reason', async () => {
      const t = (await h.call('get_task', { id: next })).task;
      return t.waitingFor ? t : null;
    });
    expect(shown.status).toBe('queued');
    const m = /^waiting for memory: 600 MiB free, codex needs ~(\d+) MiB \+ 512 reserved/.exec(shown.waitingFor);
    expect(m, shown.waitingFor).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThanOrEqual(HOG_MIB);
    // A task of a worker with no footprint yet fits in what is left above the floor, and runs.
    const mock = (await h.call('delegate_task', { objective: 'small', kind: 'explore', workspace: h.repo })).task.id;
    await waitTasks(h.engine, [mock], 60_000);
    expect(getTask(h.engine.db, mock)!.status).toBe('completed');
    expect(getTask(h.engine.db, next)!.status).toBe('queued');
    expect(readFileSync(pids, 'utf8').trim().split('\n')).toHaveLength(1);

    // Below the floor itself: even the mock worker waits.
    setFree(meminfo, 300);
    const small = (await h.call('delegate_task', { objective: 'small 2', kind: 'explore', workspace: h.repo })).task.id;
    await until('the floor reason', async () => /^waiting for memory: 300 MiB free, mock needs ~0 MiB \+ 512 reserved/.test((await h.call('get_task', { id: small })).task.waitingFor ?? ''));
    expect(getTask(h.engine.db, small)!.status).toBe('queued');

    // Memory back: both start, and nothing says they wait.
    setFree(meminfo, 100_000);
    expect((await waitTasks(h.engine, [next, small], 60_000)).reason).toBe('settled');
    expect(getTask(h.engine.db, next)!.status).toBe('completed');
    expect(getTask(h.engine.db, small)!.status).toBe('completed');
    expect(existsSync(pids) && readFileSync(pids, 'utf8').trim().split('\n')).toHaveLength(2);
  });

  it('admits everything with min_free_mib = 0', async () => {
    h = makeHome();
    const meminfo = join(h.root, 'meminfo');
    process.env[MEMINFO_ENV] = meminfo;
    setFree(meminfo, 10);
    h.configure('[scheduler]\nmin_free_mib = 0\n');
    const id = (await h.call('delegate_task', { objective: 'x', kind: 'explore', workspace: h.repo })).task.id;
    svc = await startSchedulerService(h.engine);
    await waitTasks(h.engine, [id], 60_000);
    expect(getTask(h.engine.db, id)!.status).toBe('completed');
  });
});
