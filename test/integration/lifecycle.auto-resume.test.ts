import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeHome, type TestHome } from '../helpers/env.js';
import { startCli } from '../helpers/cli.js';
import { exited, until } from '../helpers/procs.js';
import { getTask } from '../../main/store/tasks.js';
import { RETRY_STRATEGIES } from '../../main/tasks/ops.js';
import { recoverOrphans } from '../../main/scheduler/recovery.js';
import { AUTO_RESUME_LIMIT } from '../../main/tasks/auto-resume.js';

/**
 * One home (SQLite): a leader killed with kill -9 while it runs 4 tasks of one tree. The standby that
 * takes over orphans them, and — `[scheduler] auto_resume_orphans` on by default — resumes each at once
 * in its own session (an execute task in its worktree: one home is one host), outside the tree's retry
 * budget: the tree still finishes, and every retry of its budget is still there.
 */
let h: TestHome;
const children: ReturnType<typeof startCli>[] = [];
beforeEach(() => {
  h = makeHome();
  h.configure('[scheduler]\nlease_ttl_ms = 1500\nkill_grace_ms = 300\nmax_concurrency = 4\nper_root = 4\nper_repository = 4\n');
});
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  h.cleanup();
});

function lead(): ReturnType<typeof startCli> {
  const c = startCli(['run'], { home: h.home });
  children.push(c);
  return c;
}

function moves(id: string): { to: string; strategy?: string }[] {
  return (h.engine.db.prepare(`SELECT payload FROM events WHERE task_id = ? AND type = 'task.status' ORDER BY seq`).all(id) as { payload: string }[]).map((r) => JSON.parse(r.payload));
}

const session = (id: string) => h.engine.db.prepare(`SELECT 1 AS x FROM events WHERE task_id = ? AND type = 'worker.started'`).get(id) !== undefined;

describe('a crashed leader’s orphans resume by themselves', () => {
  it('kill -9 of the leader holding 4 tasks of one tree: the next leader resumes them, they complete, and the retry budget is untouched', async () => {
    const leader = lead();
    const long = (extra: Record<string, unknown> = {}) => ({ sleep_ms: 600_000, ...extra, followup: { sleep_ms: 100, ...extra } });
    const { tasks } = (await h.call('delegate_batch', {
      tasks: [
        { objective: 'look one', workspace: h.repo, metadata: { mock: long() } },
        { objective: 'look two', workspace: h.repo, metadata: { mock: long() } },
        { objective: 'change one', kind: 'execute', mode: 'auto_execute', workspace: h.repo, metadata: { mock: long({ write_files: { 'one.txt': 'one\n' } }) } },
        { objective: 'change two', kind: 'execute', mode: 'auto_execute', workspace: h.repo, metadata: { mock: long({ write_files: { 'two.txt': 'two\n' } }) } },
      ],
    })) as { tasks: { id: string }[] };
    const ids = tasks.map((t) => t.id);
    await until(() => ids.every((id) => getTask(h.engine.db, id)!.status === 'running' && session(id)), 30_000, 'the 4 tasks to run with their sessions');
    leader.kill('SIGKILL');
    await exited(leader);
    lead();
    await until(() => ids.every((id) => getTask(h.engine.db, id)!.status === 'completed'), 30_000, () => `the tree to finish: ${ids.map((id) => getTask(h.engine.db, id)!.status)}`);
    for (const id of ids) {
      expect(getTask(h.engine.db, id)!.attempt).toBe(2);
      expect(moves(id).map((m) => m.strategy).filter(Boolean)).toEqual(['auto_resume']);
      const resumed = JSON.parse((h.engine.db.prepare(`SELECT payload FROM events WHERE task_id = ? AND type = 'task.resumed'`).get(id) as { payload: string }).payload);
      expect(resumed).toMatchObject({ mode: 'session', interruptedBy: 'orphaned' });
    }
    expect(ids.flatMap(moves).filter((m) => (RETRY_STRATEGIES as readonly string[]).includes(m.strategy ?? ''))).toEqual([]);
  }, 90_000);

  it('a task that keeps losing its runner (a worker that takes its runner down) is resumed at most 3 times, then left orphaned for a person, whose retry is still within budget', async () => {
    const { task } = (await h.call('delegate_task', { objective: 'poison', workspace: h.repo, budget: { attempts: 2 } })) as { task: { id: string } };
    const id = task.id;
    // Each round: the task runs under a leader that then dies (its row left running), and the next leader recovers it.
    const crash = () => h.engine.db.prepare(`UPDATE tasks SET status = 'running', runner_id = 'a-dead-leader', pid = NULL WHERE id = ?`).run(id);
    for (let round = 1; round <= AUTO_RESUME_LIMIT; round++) {
      crash();
      expect(await recoverOrphans(h.engine, 'the-next-leader', 0)).toEqual([id]);
      expect(getTask(h.engine.db, id)).toMatchObject({ status: 'queued', attempt: round + 1 });
    }
    crash();
    await recoverOrphans(h.engine, 'the-next-leader', 0);
    expect(getTask(h.engine.db, id)).toMatchObject({ status: 'orphaned', attempt: AUTO_RESUME_LIMIT + 1 });
    const skipped = h.engine.db.prepare(`SELECT payload FROM events WHERE task_id = ? AND type = 'task.auto_resume_skipped'`).all(id) as { payload: string }[];
    expect(skipped.map((r) => JSON.parse(r.payload).reason)).toEqual([`it was resumed automatically ${AUTO_RESUME_LIMIT} times already, each time losing its runner`]);
    // Its 4 attempts were the infrastructure's but 1: its tree's limit of 2 attempts still lets a person retry.
    const r = await h.call('retry_task', { id, strategy: 'resume' });
    expect(r.task).toMatchObject({ status: 'queued', attempt: AUTO_RESUME_LIMIT + 2 });
  });
});
