import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { transition, TRANSITIONS } from '../../main/tasks/state.js';
import { STATUSES, type TaskStatus } from '../../main/tasks/types.js';
import { getTask } from '../../main/store/tasks.js';
import { updateRunFields } from '../../main/store/fence.js';
import { appendEvent } from '../../main/store/events.js';
import { getSetting, setSetting } from '../../main/store/settings.js';
import { fenceRunEvents, writeEvents } from '../../main/runner/task-writes.js';
import type { Task } from '../../main/tasks/types.js';
import { isPostgres } from '../../main/store/db.js';
import { fleetIdentity, registerRunner } from '../../main/scheduler/fleet.js';
import { tryAcquireLease } from '../../main/store/leases.js';
import { makeHome, type TestHome } from '../helpers/env.js';

let h: TestHome;
beforeEach(() => {
  h = makeHome();
});
afterEach(() => h.cleanup());

/** Force a task into a state (test setup only), bypassing the state machine. */
function force(id: string, status: TaskStatus): void {
  h.engine.db.prepare('UPDATE tasks SET status = ? WHERE id = ?').run(status, id);
}

async function newTask(extra: Record<string, unknown> = {}): Promise<string> {
  const r = await h.call('delegate_task', { objective: 'do a thing', workspace: h.repo, ...extra });
  return r.task.id;
}

describe('task state machine', () => {
  it('allows exactly the legal edges and rejects every other one with illegal_transition', async () => {
    const id = await newTask();
    let legal = 0;
    let illegal = 0;
    for (const from of STATUSES) {
      for (const to of STATUSES) {
        force(id, from);
        const ok = TRANSITIONS[from].includes(to);
        if (ok) {
          const t = h.engine.write(() => transition(h.engine.db, id, from, to));
          expect(t.status).toBe(to);
          legal++;
        } else {
          expect(() => h.engine.write(() => transition(h.engine.db, id, from, to))).toThrow(expect.objectContaining({ code: 'illegal_transition' }));
          expect(getTask(h.engine.db, id)!.status).toBe(from);
          illegal++;
        }
      }
    }
    expect(legal).toBeGreaterThan(20);
    expect(illegal).toBeGreaterThan(100);
  });

  it('refuses a compare-and-set from a stale state with conflict and changes nothing', async () => {
    const id = await newTask();
    force(id, 'running');
    expect(() => h.engine.write(() => transition(h.engine.db, id, 'queued', 'starting'))).toThrow(expect.objectContaining({ code: 'conflict' }));
    expect(getTask(h.engine.db, id)!.status).toBe('running');
  });

  it('fences a runner to the attempt it claimed: once the task is another attempt or another runner’s, its moves are refused and change nothing', async () => {
    const id = await newTask();
    const db = h.engine.db;
    db.prepare(`UPDATE tasks SET status = 'running', attempt = 1, runner_id = 'runner-a' WHERE id = ?`).run(id);
    // The fleet orphaned attempt 1 and a retry put attempt 2 on runner b.
    db.prepare(`UPDATE tasks SET status = 'running', attempt = 2, runner_id = 'runner-b' WHERE id = ?`).run(id);
    const stale = { attempt: 1, runnerId: 'runner-a' };
    expect(() => h.engine.write(() => transition(db, id, 'running', 'orphaned', { fence: stale }))).toThrow(expect.objectContaining({ code: 'conflict', message: expect.stringMatching(/attempt 1 of runner runner-a is no longer current/) }));
    expect(() => h.engine.write(() => transition(db, id, 'running', 'failed', { fence: { attempt: 2, runnerId: 'runner-a' } }))).toThrow(expect.objectContaining({ code: 'conflict' }));
    expect(getTask(db, id)).toMatchObject({ status: 'running', attempt: 2, runnerId: 'runner-b' });
    expect(h.engine.write(() => transition(db, id, 'running', 'verifying', { fence: { attempt: 2, runnerId: 'runner-b' } })).status).toBe('verifying');
  });

  it('fences the fields a run writes besides its moves (a verify command’s pid, the session id, the worktree path) to its attempt', async () => {
    const id = await newTask();
    const db = h.engine.db;
    db.prepare(`UPDATE tasks SET status = 'running', attempt = 2, runner_id = 'runner-b', pid = 4242, session_id = 'session-b' WHERE id = ?`).run(id);
    const staleRun = { id, attempt: 1, runnerId: 'runner-a' };
    expect(h.engine.write(() => updateRunFields(db, staleRun, { pid: 99, sessionId: 'session-a', worktreePath: '/elsewhere' }))).toBe(false);
    expect(getTask(db, id)).toMatchObject({ pid: 4242, sessionId: 'session-b', worktreePath: null });
    expect(h.engine.write(() => updateRunFields(db, { id, attempt: 2, runnerId: 'runner-b' }, { pid: 7 }))).toBe(true);
    expect(getTask(db, id)!.pid).toBe(7);
  });

  it('fences the events a run writes to its attempt: a stale run (its task resumed as a newer attempt) adds nothing to the log', async () => {
    const id = await newTask();
    const db = h.engine.db;
    db.prepare(`UPDATE tasks SET status = 'running', attempt = 1, runner_id = 'runner-a' WHERE id = ?`).run(id);
    const staleRun = fenceRunEvents(h.engine, id, { attempt: 1, runnerId: 'runner-a' });
    const task = getTask(db, id) as Task;
    staleRun.write(() => writeEvents(staleRun, task, [{ type: 'worker.message', text: 'attempt 1, while current' }]));
    // The fleet orphaned attempt 1 and a retry put attempt 2 on runner b; then runner a wakes.
    db.prepare(`UPDATE tasks SET status = 'running', attempt = 2, runner_id = 'runner-b' WHERE id = ?`).run(id);
    const before = db.prepare('SELECT COUNT(*) AS n FROM events WHERE task_id = ?').get(id) as { n: number };
    expect(staleRun.write(() => appendEvent(db, id, 'worker.message', { text: 'attempt 1, stale' }))).toBe(0);
    staleRun.write(() => writeEvents(staleRun, task, [{ type: 'worker.message', text: 'attempt 1, stale output' }]));
    expect(db.prepare('SELECT COUNT(*) AS n FROM events WHERE task_id = ?').get(id)).toEqual(before);
    // Events of other tasks, and the current attempt's own, still land.
    const current = fenceRunEvents(h.engine, id, { attempt: 2, runnerId: 'runner-b' });
    expect(current.write(() => appendEvent(db, id, 'worker.message', { text: 'attempt 2' }))).toBeGreaterThan(0);
    expect(staleRun.write(() => appendEvent(db, null, 'worker.message', { text: 'no task' }))).toBeGreaterThan(0);
    const texts = (db.prepare(`SELECT payload FROM events WHERE task_id = ? AND type = 'worker.message' ORDER BY seq`).all(id) as { payload: string }[]).map((r) => (JSON.parse(r.payload) as { text: string }).text);
    expect(texts).toEqual(['attempt 1, while current', 'attempt 2']);
  });

  it('clears a task\'s host pin (run_host) when it ends, in the same transaction, in every end state', async () => {
    const db = h.engine.db;
    const ends: TaskStatus[] = ['completed', 'failed', 'timed_out', 'cancelled', 'orphaned'];
    for (const to of ends) {
      const id = await newTask();
      const from: TaskStatus = TRANSITIONS.running.includes(to) ? 'running' : 'verifying';
      force(id, from);
      h.engine.write(() => setSetting(db, `run_host.${id}`, 'host-a'));
      // A transaction that fails after the end changes neither.
      expect(() => h.engine.write(() => {
        transition(db, id, from, to);
        expect(getSetting(db, `run_host.${id}`)).toBeNull();
        throw new Error('rolled back');
      })).toThrow('rolled back');
      expect(getTask(db, id)!.status).toBe(from);
      expect(getSetting(db, `run_host.${id}`)).toBe('host-a');
      h.engine.write(() => transition(db, id, from, to));
      expect(getSetting(db, `run_host.${id}`), to).toBeNull();
    }
    // Moves that are no end keep it (a queued resume waits for its host's runner).
    const id = await newTask();
    h.engine.write(() => setSetting(db, `run_host.${id}`, 'host-a'));
    h.engine.write(() => transition(db, id, 'queued', 'starting'));
    h.engine.write(() => transition(db, id, 'starting', 'running'));
    expect(getSetting(db, `run_host.${id}`)).toBe('host-a');
  });

  it('lets exactly one of two connections win a concurrent compare-and-set', async () => {
    const id = await newTask();
    const a = h.connect();
    const b = h.connect();
    const results: boolean[] = [];
    for (const db of [a, b]) {
      const won = db.transaction(() => {
        try {
          transition(db, id, 'queued', 'starting');
          return true;
        } catch (e) {
          expect((e as { code: string }).code).toBe('conflict');
          return false;
        }
      }).immediate();
      results.push(won);
    }
    a.close();
    b.close();
    expect(results.filter(Boolean)).toHaveLength(1);
    const starts = h.engine.db.prepare(`SELECT COUNT(*) AS n FROM events WHERE task_id = ? AND type = 'task.status' AND payload LIKE '%"to":"starting"%'`).get(id) as { n: number };
    expect(starts.n).toBe(1);
  });

  it('blocks every transitive dependent in the same transaction when a task fails', async () => {
    const a = await newTask({ name: 'a' });
    const b = await newTask({ name: 'b', depends_on: [a] });
    const c = await newTask({ name: 'c', depends_on: [b] });
    const d = await newTask({ name: 'd', depends_on: [c], kind: 'execute' }); // awaiting approval: blocked too
    const other = await newTask({ name: 'unrelated' });
    force(a, 'running');
    h.engine.write(() => transition(h.engine.db, a, 'running', 'failed', { reason: 'boom' }));
    for (const id of [b, c, d]) {
      const t = getTask(h.engine.db, id)!;
      expect(t.status).toBe('blocked');
      expect(t.error?.message).toMatch(/dependency/);
    }
    expect(getTask(h.engine.db, b)!.blockedBy).toBe(a);
    expect(getTask(h.engine.db, c)!.blockedBy).toBe(b);
    expect(getTask(h.engine.db, other)!.status).toBe('queued');
  });

  it('releases blocked dependents when the failed task is retried', async () => {
    const a = await newTask();
    const b = await newTask({ depends_on: [a] });
    force(a, 'running');
    h.engine.write(() => transition(h.engine.db, a, 'running', 'failed'));
    expect(getTask(h.engine.db, b)!.status).toBe('blocked');
    const r = await h.call('retry_task', { id: a });
    expect(r.task.status).toBe('queued');
    expect(r.task.attempt).toBe(2);
    expect(getTask(h.engine.db, b)!.status).toBe('queued');
  });

  it('cancels an unstarted task at once, only requests cancel for one its live runner runs, and ends one whose runner is gone', async () => {
    const a = await newTask();
    expect((await h.call('cancel_task', { id: a })).task.status).toBe('cancelled');
    const b = await newTask();
    force(b, 'running');
    // Its runner is alive: a fleet runner with a valid lease, or the leader of this home.
    const db = h.engine.db;
    if (isPostgres(db)) h.engine.write(() => registerRunner(db, 'live-runner', fleetIdentity(h.engine.config), 4, 60_000));
    else expect(tryAcquireLease(db, 'live-runner', 60_000)).toBe(true);
    db.prepare(`UPDATE tasks SET runner_id = 'live-runner' WHERE id = ?`).run(b);
    const r = await h.call('cancel_task', { id: b });
    expect(r.task.status).toBe('running');
    expect(r.task.cancelRequested).toBe(true);
    await expect(h.call('cancel_task', { id: a })).rejects.toMatchObject({ code: 'illegal_transition' });
    // Its runner is gone (no such runner, nobody leads as it): nobody would act on a request, so it ends now.
    const c = await newTask();
    force(c, 'running');
    db.prepare(`UPDATE tasks SET runner_id = 'gone-runner' WHERE id = ?`).run(c);
    expect((await h.call('cancel_task', { id: c })).task.status).toBe('cancelled');
  });

  it('decides queued vs awaiting_approval by mode and kind', async () => {
    const cases: [string, string, string][] = [
      ['auto_readonly', 'explore', 'queued'],
      ['auto_readonly', 'execute', 'awaiting_approval'],
      ['plan_only', 'explore', 'awaiting_approval'],
      ['auto_execute', 'execute', 'queued'],
    ];
    for (const [mode, kind, status] of cases) {
      const r = await h.call('delegate_task', { objective: 'x', workspace: h.repo, mode, kind });
      expect(r.task.status, `${mode}/${kind}`).toBe(status);
    }
  });

  it('approval moves a waiting task to queued, and MCP may not approve by default', async () => {
    const id = await newTask({ kind: 'execute' });
    await expect(h.call('approve_task', { id }, 'mcp')).rejects.toMatchObject({ code: 'forbidden' });
    expect((await h.call('approve_task', { id })).task.status).toBe('queued');
  });
});
