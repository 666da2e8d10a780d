import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { getTask } from '../../main/store/tasks.js';
import { makeHome, type TestHome } from '../helpers/env.js';

let h: TestHome;
let svc: SchedulerService | null = null;
beforeEach(() => {
  h = makeHome();
});
afterEach(async () => {
  await svc?.stop();
  svc = null;
  h.cleanup();
});

/** Track the most tasks running at once, overall and per root. */
function trackConcurrency(home: TestHome) {
  const active = new Map<string, string>(); // task → root
  let maxAll = 0;
  const maxPerRoot = new Map<string, number>();
  home.engine.events.on('event', (e) => {
    if (e.type !== 'task.status' || !e.taskId) return;
    const to = e.payload.to as string;
    if (to === 'starting') {
      active.set(e.taskId, getTask(home.engine.db, e.taskId)!.rootId);
    } else if (!['running', 'verifying'].includes(to)) active.delete(e.taskId);
    maxAll = Math.max(maxAll, active.size);
    const counts = new Map<string, number>();
    for (const r of active.values()) counts.set(r, (counts.get(r) ?? 0) + 1);
    for (const [r, n] of counts) maxPerRoot.set(r, Math.max(maxPerRoot.get(r) ?? 0, n));
  });
  return { max: () => maxAll, maxPerRoot: () => Math.max(0, ...maxPerRoot.values()) };
}

describe('scheduler dispatch', () => {
  it('drains tasks within the global and per-root limits', async () => {
    const mock = { sleep_ms: 150 };
    const batch = (n: number) => ({ tasks: Array.from({ length: n }, (_, i) => ({ objective: `t${i}`, workspace: h.repo, metadata: { mock } })) });
    const roots = [await h.call('delegate_batch', batch(5)), await h.call('delegate_batch', batch(5)), await h.call('delegate_batch', batch(5))];
    const ids = roots.flatMap((r) => r.tasks.map((t: { id: string }) => t.id));
    const track = trackConcurrency(h);
    svc = await startSchedulerService(h.engine);
    const r = await waitTasks(h.engine, ids, 60_000);
    expect(r.reason).toBe('settled');
    expect(r.tasks.every((t) => t.status === 'completed')).toBe(true);
    expect(track.max()).toBeLessThanOrEqual(4);
    expect(track.max()).toBeGreaterThan(1);
    expect(track.maxPerRoot()).toBeLessThanOrEqual(2);
  });

  it('runs higher priority first and round-robins across roots of equal priority', async () => {
    h.configure('[scheduler]\nmax_concurrency = 1\n');
    const low = await h.call('delegate_batch', { tasks: [0, 1, 2].map((i) => ({ objective: `a${i}`, workspace: h.repo })) });
    const other = await h.call('delegate_batch', { tasks: [0, 1, 2].map((i) => ({ objective: `b${i}`, workspace: h.repo })) });
    const urgent = await h.call('delegate_task', { objective: 'urgent', workspace: h.repo, priority: 99 });
    const order: string[] = [];
    h.engine.events.on('event', (e) => {
      if (e.type === 'task.status' && e.payload.to === 'starting') order.push(e.taskId!);
    });
    svc = await startSchedulerService(h.engine);
    const ids = [...low.tasks, ...other.tasks, urgent.task].map((t: { id: string }) => t.id);
    await waitTasks(h.engine, ids, 60_000);
    expect(order[0]).toBe(urgent.task.id);
    const rootOf = (id: string) => getTask(h.engine.db, id)!.rootId;
    const roots = order.slice(1).map(rootOf);
    // Alternates between the two trees instead of draining one first.
    for (let i = 1; i < roots.length; i++) expect(roots[i]).not.toBe(roots[i - 1]);
  });

  it('does not run a task before its dependencies complete, and blocks it when one fails', async () => {
    const r = await h.call('delegate_batch', {
      tasks: [
        { ref: 'a', objective: 'a', workspace: h.repo, metadata: { mock: { sleep_ms: 100 } } },
        { ref: 'b', objective: 'b', workspace: h.repo, depends_on: ['a'] },
        { ref: 'x', objective: 'x', workspace: h.repo, metadata: { mock: { fail_message: 'nope' } } },
        { ref: 'y', objective: 'y', workspace: h.repo, depends_on: ['x'] },
      ],
    });
    const [a, b, x, y] = r.tasks.map((t: { id: string }) => t.id);
    svc = await startSchedulerService(h.engine);
    await waitTasks(h.engine, [a, b, x, y], 60_000);
    const ta = getTask(h.engine.db, a)!;
    const tb = getTask(h.engine.db, b)!;
    expect(tb.status).toBe('completed');
    expect(tb.startedAt!).toBeGreaterThanOrEqual(ta.endedAt!);
    expect(getTask(h.engine.db, x)!.status).toBe('failed');
    expect(getTask(h.engine.db, x)!.error).toMatchObject({ code: 'worker_failed', message: 'nope' });
    expect(getTask(h.engine.db, y)!.status).toBe('blocked');
  });

  it('wait returns at once when a dependency waits for approval, and again once the work ends', async () => {
    const gate = await h.call('delegate_task', { objective: 'write', workspace: h.repo, kind: 'review', mode: 'plan_only' });
    const after = await h.call('delegate_task', { objective: 'read', workspace: h.repo, depends_on: [gate.task.id] });
    svc = await startSchedulerService(h.engine);
    const r = await waitTasks(h.engine, [after.task.id], 30_000);
    expect(r.reason).toBe('needs_approval');
    expect(r.tasks[0].waitingOn).toEqual([gate.task.id]);
    await h.call('approve_task', { id: gate.task.id });
    const done = await waitTasks(h.engine, [after.task.id, gate.task.id], 30_000);
    expect(done.reason).toBe('settled');
    expect(done.tasks.map((t) => t.status)).toEqual(['completed', 'completed']);
  });

  it('records a non-JSON answer as schema_valid=false, and fails a planner that returns no plan', async () => {
    const text = await h.call('delegate_task', { objective: 'x', workspace: h.repo, metadata: { mock: { text: 'just prose' } } });
    const plan = await h.call('delegate_task', { objective: 'x', workspace: h.repo, kind: 'plan', metadata: { mock: { text: 'no plan' } } });
    svc = await startSchedulerService(h.engine);
    await waitTasks(h.engine, [text.task.id, plan.task.id], 30_000);
    const t = getTask(h.engine.db, text.task.id)!;
    expect(t.status).toBe('completed');
    expect(t.schemaValid).toBe(false);
    expect(t.result).toEqual({ text: 'just prose' });
    expect(getTask(h.engine.db, plan.task.id)!.status).toBe('failed');
  });

  it('pauses a rate-limited worker and puts the task back in the queue as the same attempt instead of failing it', async () => {
    // No retries to spend: a rate limit must not need one.
    h.configure('[limits]\nretry_budget = 0\n');
    const limited = await h.call('delegate_task', { objective: 'x', workspace: h.repo, metadata: { mock: { rate_limit: true } } });
    svc = await startSchedulerService(h.engine);
    const start = Date.now();
    while (Date.now() - start < 10_000) {
      const e = (await h.call('get_events', { task_id: limited.task.id })).events.find((x: { type: string }) => x.type === 'task.rate_limited');
      if (e) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const t = getTask(h.engine.db, limited.task.id)!;
    expect(t.attempt).toBe(1);
    expect(t.status).toBe('queued');
    expect(t.error).toBeNull();
    const st = await h.call('scheduler_status');
    expect(st.pausedWorkers.map((p: { worker: string }) => p.worker)).toEqual(['mock']);
    // The queue says why it waits.
    expect((await h.call('get_task', { id: t.id })).task.waitingFor).toMatch(/^worker mock rate limited \(task \w+\); retrying at \S+ \(backoff\)$/);
  });
});
