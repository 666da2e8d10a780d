import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { listEvents } from '../../main/store/events.js';
import { getTask } from '../../main/store/tasks.js';
import { runCli, startCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { exited, isAlive, until } from '../helpers/procs.js';

let h: TestHome;
let svc: SchedulerService | null = null;
beforeEach(() => {
  h = makeHome();
  h.configure('[scheduler]\nkill_grace_ms = 300\n');
});
afterEach(async () => {
  await svc?.stop();
  svc = null;
  h.cleanup();
});

/** PIDs of the worker and of the grandchild it spawned (reported in its events). */
function treePids(id: string): number[] {
  const t = getTask(h.engine.db, id)!;
  const events = listEvents(h.engine.db, { taskId: id, types: ['worker.tool', 'task.status'] }).events;
  const pids = events.filter((e) => e.type === 'worker.tool' && e.payload.name === 'spawn').map((e) => Number(e.payload.output));
  const spawned = events.find((e) => e.type === 'task.status' && typeof e.payload.pid === 'number');
  return [...pids, ...(spawned ? [spawned.payload.pid as number] : []), ...(t.pid ? [t.pid] : [])];
}

async function runningWithGrandchild(extra: Record<string, unknown> = {}): Promise<string> {
  const r = await h.call('delegate_task', { objective: 'hang', workspace: h.repo, metadata: { mock: { sleep_ms: 60_000, grandchild: true, ignore_sigterm: true } }, ...extra });
  const id = r.task.id;
  await until(() => treePids(id).length >= 2, 20_000, 'the worker and its grandchild to start');
  return id;
}

describe('hard timeout and cancel kill the whole tree', () => {
  it('a timeout kills a worker whose grandchild ignores SIGTERM', async () => {
    svc = await startSchedulerService(h.engine);
    const id = await runningWithGrandchild({ timeout_s: 2 });
    const pids = treePids(id);
    const r = await waitTasks(h.engine, [id], 30_000);
    expect(r.tasks[0].status).toBe('timed_out');
    expect(r.tasks[0].error?.code).toBe('timed_out');
    await until(() => pids.every((p) => !isAlive(p)), 5000, 'the tree to die');
  });

  it('a cancel from another process kills the tree', async () => {
    svc = await startSchedulerService(h.engine);
    const id = await runningWithGrandchild();
    const pids = treePids(id);
    const c = await runCli(['cancel', id], { home: h.home });
    expect(c.code).toBe(0);
    const r = await waitTasks(h.engine, [id], 30_000);
    expect(r.tasks[0].status).toBe('cancelled');
    await until(() => pids.every((p) => !isAlive(p)), 5000, 'the tree to die');
  });

  it('run --timeout is a hard bound that cancels what still runs', async () => {
    const r = await h.call('delegate_task', { objective: 'hang', workspace: h.repo, metadata: { mock: { sleep_ms: 60_000 } } });
    // Generous bound: the CLI must start, lead and spawn the worker before the deadline even on a busy machine.
    // The deadline counts from the process start, so the startup itself must fit well within it.
    const child = startCli(['run', '--timeout', '12'], { home: h.home });
    await until(() => getTask(h.engine.db, r.task.id)!.status === 'running', 12_000, 'the worker to start');
    const code = await exited(child);
    expect(code).toBe(1);
    expect(getTask(h.engine.db, r.task.id)!.status).toBe('cancelled');
  });
});

describe('runaway output', () => {
  it('a worker printing 100 MB does not grow the scheduler without bound', async () => {
    const r = await h.call('delegate_task', { objective: 'noise', workspace: h.repo, metadata: { mock: { output_mb: 100 } } });
    const child = startCli(['run', '--until-idle'], { home: h.home });
    let peakKb = 0;
    const sample = setInterval(() => {
      try {
        const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        if (m) peakKb = Math.max(peakKb, Number(m[1]));
      } catch {
        // exited
      }
    }, 50);
    const code = await exited(child);
    clearInterval(sample);
    expect(code).toBe(0);
    expect(getTask(h.engine.db, r.task.id)!.status).toBe('completed');
    // 100 MB went through; the process stayed far below that on top of its own baseline.
    expect(peakKb / 1024).toBeLessThan(300);
    const raw = readFileSync(join(h.engine.home.artifacts, r.task.id, 'attempt-1', 'stdout.jsonl'));
    expect(raw.length).toBeLessThanOrEqual(17 * 1024 * 1024);
  });
});
