import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { taskCachelab } from '../../main/cachelab/task-cachelab.js';
import { isPostgres } from '../../main/store/db.js';
import { registerRunner } from '../../main/scheduler/fleet.js';
import { getSetting } from '../../main/store/settings.js';
import { getTask } from '../../main/store/tasks.js';
import { retryTask } from '../../main/tasks/ops.js';
import { enterWaiting, openRequest } from '../../main/requests/requests.js';
import type { TaskStatus } from '../../main/tasks/types.js';
import { makeHome, type TestHome } from '../helpers/env.js';

/**
 * A new attempt of an execute task that keeps its worktree (resume, follow-up, answer, reverify) is pinned, in
 * the transaction that makes it, to the host of the runner that held the last attempt; a fresh one
 * (`same`) is not. On one home (SQLite) no pin is written. The fleet test (fleet.resume-pin) shows
 * what a user sees; this one each strategy and the transaction.
 */
let h: TestHome;
beforeEach(() => {
  h = makeHome();
});
afterEach(() => h.cleanup());

/** An execute task that last ran on a runner of host-a, left in `status`. */
async function ranOnHostA(status: TaskStatus): Promise<string> {
  const db = h.engine.db;
  const r = await h.call('delegate_task', { objective: 'change a thing', workspace: h.repo, kind: 'execute', mode: 'auto_execute', verify: [['true']] });
  const id = r.task.id as string;
  const runner = `runner-${id}`;
  if (isPostgres(db)) h.engine.write(() => registerRunner(db, runner, { host: 'host-a', repos: new Map() }, 4, 60_000));
  db.prepare('UPDATE tasks SET status = ?, runner_id = ?, worktree_path = ?, error_code = ? WHERE id = ?').run(status, runner, `/elsewhere/${id}`, status === 'orphaned' ? 'orphaned' : null, id);
  return id;
}

const pinOf = (id: string) => getSetting<string>(h.engine.db, `run_host.${id}`);

describe('host pin of a new attempt that keeps the worktree', () => {
  it('resume, follow-up, reverify and an answer pin to the last runner\'s host (in a fleet; nothing on one home); same does not', async () => {
    const expected = isPostgres(h.engine.db) ? 'host-a' : null;
    const resumed = await ranOnHostA('orphaned');
    await h.call('retry_task', { id: resumed, strategy: 'resume' });
    expect(pinOf(resumed)).toBe(expected);
    const followed = await ranOnHostA('completed');
    await h.call('followup_task', { id: followed, message: 'and the tests' });
    expect(pinOf(followed)).toBe(expected);
    const reverified = await ranOnHostA('failed');
    await h.call('reverify_task', { id: reverified });
    expect(pinOf(reverified)).toBe(expected);
    // An answer continues the session too (the task waited for a person, its runner's attempt ended).
    const answered = await ranOnHostA('running');
    h.engine.write(() => {
      const req = openRequest(h.engine.db, h.engine.config, getTask(h.engine.db, answered)!, { kind: 'question', question: 'which file?' });
      enterWaiting(h.engine.db, answered, req);
    });
    await h.call('answer_task', { id: answered, text: 'the first one' });
    expect(pinOf(answered)).toBe(expected);
    const fresh = await ranOnHostA('orphaned');
    await h.call('retry_task', { id: fresh, strategy: 'same' });
    expect(pinOf(fresh)).toBeNull();
    for (const id of [resumed, followed, reverified, answered, fresh]) expect(getTask(h.engine.db, id)!.status).toBe('queued');
  });

  it('is written in the transaction that makes the attempt: rolled back with it', async () => {
    const db = h.engine.db;
    const id = await ranOnHostA('orphaned');
    expect(() =>
      h.engine.write(() => {
        retryTask(db, h.engine.config, id, 'resume', 'a test', 'person', taskCachelab);
        expect(pinOf(id)).toBe(isPostgres(db) ? 'host-a' : null);
        throw new Error('rolled back');
      }),
    ).toThrow('rolled back');
    expect(getTask(db, id)!.status).toBe('orphaned');
    expect(pinOf(id)).toBeNull();
  });
});
