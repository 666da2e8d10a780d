import { afterEach, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { makeHome, type TestHome } from '../helpers/env.js';

/**
 * The per-task limits of worker turns a user sets, as the seed has them: `metadata.auto_repair` (repair
 * turns after a failed verification; 0 disables them) beside `[verify] auto_repair`, and
 * `limits.maximum_follow_up_turns` (follow-ups into one task's session).
 */
let h: TestHome | null = null;
let svc: SchedulerService | null = null;
afterEach(async () => {
  await svc?.stop();
  svc = null;
  h?.cleanup();
  h = null;
});

const FAILING_VERIFY = [['node', '-e', 'process.exit(1)']];

async function turnsOf(home: TestHome, id: string): Promise<number> {
  const { events } = await home.call('get_events', { task_id: id, types: ['worker.started'], limit: 100 });
  return events.filter((e: { type: string }) => e.type === 'worker.started').length;
}

describe('per-task repair and follow-up limits', () => {
  it('metadata.auto_repair sets the task’s own repair turns (0: none, 2: two), over [verify] auto_repair = 1', async () => {
    h = makeHome();
    h.configure('[verify]\nauto_repair = 1\n');
    const submit = async (autoRepair: number | undefined) =>
      (await h!.call('delegate_task', { objective: `verify fails (${autoRepair})`, kind: 'explore', workspace: h!.repo, worker: 'mock', verify: FAILING_VERIFY, metadata: autoRepair === undefined ? {} : { auto_repair: autoRepair } })).task.id as string;
    const ids = [await submit(0), await submit(2), await submit(undefined)];
    svc = await startSchedulerService(h.engine);
    const r = await waitTasks(h.engine, ids, 120_000);
    expect(r.tasks.map((t) => [t.status, t.error?.code])).toEqual(ids.map(() => ['failed', 'verification_failed']));
    expect(await Promise.all(ids.map((id) => turnsOf(h!, id)))).toEqual([1, 3, 2]);
  });

  it('a bad metadata.auto_repair is refused naming the field, and no task is made', async () => {
    h = makeHome();
    for (const bad of [-1, 6, 1.5, 'two']) {
      const e = await h.call('delegate_task', { objective: 'x', kind: 'explore', workspace: h.repo, worker: 'mock', metadata: { auto_repair: bad } }).catch((x) => x);
      expect(e.code).toBe('invalid_input');
      expect(e.message).toMatch(/^metadata\.auto_repair: an integer from 0 \(no repair turn\) to 5/);
    }
    expect((await h.call('list_tasks', {})).tasks).toHaveLength(0);
  });

  it('limits.maximum_follow_up_turns caps the follow-ups of one task; the refusal says what to do', async () => {
    h = makeHome();
    h.configure('[limits]\nmaximum_follow_up_turns = 1\n');
    const id = (await h.call('delegate_task', { objective: 'answer once', kind: 'explore', workspace: h.repo, worker: 'mock' })).task.id as string;
    svc = await startSchedulerService(h.engine);
    expect((await waitTasks(h.engine, [id], 60_000)).tasks[0].status).toBe('completed');
    await h.call('followup_task', { id, message: 'and once more' });
    expect((await waitTasks(h.engine, [id], 60_000)).tasks[0].status).toBe('completed');
    const e = await h.call('followup_task', { id, message: 'a third time' }).catch((x) => x);
    expect(e.code).toBe('forbidden');
    expect(e.message).toMatch(/has had its 1 follow-ups \(limits\.maximum_follow_up_turns\); submit a new task/);
    expect((await h.call('get_task', { id })).task.status).toBe('completed');
  });
});
