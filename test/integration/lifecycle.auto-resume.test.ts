import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeHome, type TestHome } from '../helpers/env.js';
import { startCli } from '../helpers/cli.js';
import { exited, until } from '../helpers/procs.js';
import { getTask } from '../../main/store/tasks.js';
import { RETRY_STRATEGIES } from '../../main/tasks/ops.js';

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
});
