import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { getTask } from '../../main/store/tasks.js';
import { makeHome, type TestHome } from '../helpers/env.js';

let h: TestHome;
let svc: SchedulerService | null = null;
beforeEach(() => {
  h = makeHome();
  h.configure('[scheduler]\nmax_concurrency = 1\n');
});
afterEach(async () => {
  await svc?.stop();
  svc = null;
  h.cleanup();
});

describe('scheduler cache-cohort affinity (in process, max_concurrency 1)', () => {
  it('groups a cohort in pairs without starving the other cohort', async () => {
    // Roots A and C share a cohort (same worker, kind, route); B's higher effort is another cohort.
    const batch = (label: string, extra: Record<string, unknown> = {}) =>
      h.call('delegate_batch', { tasks: [0, 1, 2, 3].map((i) => ({ objective: `${label}${i}`, name: `${label}${i}`, workspace: h.repo, ...extra })) });
    const roots = { A: await batch('A'), B: await batch('B', { reasoning_effort: 'high' }), C: await batch('C') };
    const ids = Object.values(roots).flatMap((r) => r.tasks.map((t: { id: string }) => t.id));
    const cohort = (id: string) => (h.engine.db.prepare('SELECT cohort FROM tasks WHERE id = ?').get(id) as { cohort: string }).cohort;
    expect(cohort(roots.A.tasks[0].id)).toBe(cohort(roots.C.tasks[0].id));
    expect(cohort(roots.A.tasks[0].id)).not.toBe(cohort(roots.B.tasks[0].id));

    const order: string[] = [];
    h.engine.events.on('event', (e) => {
      if (e.type === 'task.status' && e.payload.to === 'starting') order.push(getTask(h.engine.db, e.taskId!)!.name[0]);
    });
    svc = await startSchedulerService(h.engine);
    const r = await waitTasks(h.engine, ids, 60_000);
    expect(r.tasks.every((t) => t.status === 'completed')).toBe(true);
    // One extra pick of the previous cohort, then round-robin hands the turn to the other cohort.
    expect(order.join('')).toBe('ACBBACBBACAC');
    const cohortOf = (root: string) => (root === 'B' ? 'Y' : 'X');
    const seq = order.map(cohortOf);
    for (let i = 2; i < seq.length; i++) {
      const othersWaiting = seq.slice(i + 1).some((c) => c !== seq[i]);
      if (othersWaiting) expect(seq[i] === seq[i - 1] && seq[i] === seq[i - 2], `three ${seq[i]} in a row at ${i}: ${order.join('')}`).toBe(false);
    }
  });
});
