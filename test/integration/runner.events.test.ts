import { afterEach, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { listEvents } from '../../main/store/events.js';
import { getTask } from '../../main/store/tasks.js';
import { transition } from '../../main/tasks/state.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { until } from '../helpers/procs.js';

// runner/run-task.ts: a worker's events stream in batches while it runs; those still held when it exits are
// written with the task's next transaction (for a fast read-only task, its completion), never dropped.
let h: TestHome | null = null;
let svc: SchedulerService | null = null;
afterEach(async () => {
  await svc?.stop();
  svc = null;
  h?.cleanup();
  h = null;
});

const timeline = (id: string) =>
  listEvents(h!.engine.db, { taskId: id, limit: 1000 }).events.map((e) => (e.type === 'task.status' ? `status:${String(e.payload.to)}` : e.type));

describe("a worker's last events", () => {
  it('are written in order with the completion: running, the worker events, verifying, the inspection, completed', async () => {
    h = makeHome();
    const { task } = await h.call('delegate_task', { objective: 'look', kind: 'explore', workspace: h.repo, worker: 'mock', metadata: { mock: { message: 'found it', usage: { input: 11, cached: 5, output: 3 } } } });
    svc = await startSchedulerService(h.engine);
    await waitTasks(h.engine, [task.id], 30_000);
    const t = timeline(task.id);
    const at = (x: string) => t.indexOf(x);
    expect(at('status:completed')).toBeGreaterThan(-1);
    expect(at('worker.started')).toBeGreaterThan(at('status:running'));
    expect(at('worker.message')).toBeGreaterThan(at('worker.started'));
    expect(at('worker.usage')).toBeGreaterThan(at('worker.message'));
    expect(at('status:verifying')).toBeGreaterThan(at('worker.usage'));
    expect(at('changes.inspected')).toBeGreaterThan(at('status:verifying'));
    expect(at('status:completed')).toBeGreaterThan(at('changes.inspected'));
    expect(getTask(h.engine.db, task.id)!.usage).toMatchObject({ inputTokens: 11, cachedTokens: 5, outputTokens: 3 });
  });

  it('are still recorded when the task was moved by someone else before it could complete', async () => {
    h = makeHome();
    const { task } = await h.call('delegate_task', { objective: 'slow', kind: 'explore', workspace: h.repo, worker: 'mock', metadata: { mock: { sleep_ms: 800, message: 'late words', usage: { input: 7, cached: 0, output: 2 } } } });
    svc = await startSchedulerService(h.engine);
    await until(() => getTask(h!.engine.db, task.id)?.status === 'running', 20_000, 'the worker to run');
    // As a takeover would: the task is no longer this runner's to complete.
    h.engine.write(() => transition(h!.engine.db, task.id, 'running', 'orphaned', { reason: 'test: moved by another runner' }));
    await until(() => timeline(task.id).includes('worker.usage'), 20_000, 'the worker events to be written');
    expect(getTask(h.engine.db, task.id)!.status).toBe('orphaned');
    const t = timeline(task.id);
    expect(t).toContain('worker.message');
    expect(t).not.toContain('status:completed');
    expect(getTask(h.engine.db, task.id)!.usage).toMatchObject({ inputTokens: 7, outputTokens: 2 });
  });
});
