import { isPostgres } from '../../main/store/db.js';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CANDIDATES_SQL, claimTask, listCandidates } from '../../main/store/claims.js';
import { isIdle } from '../../main/store/work-counts.js';
import { openDb, SCHEMA_VERSION } from '../../main/store/db.js';
import { MIGRATIONS } from '../../main/store/migrations/index.js';
import { transition } from '../../main/tasks/state.js';
import { makeHome, tempDir, type TestHome } from '../helpers/env.js';

// The ready set: queued tasks whose dependencies all completed are found through an index
// kept by triggers, not by scanning every queued row; the answers must equal the old scan's.

let h: TestHome;
afterEach(() => h?.cleanup());

const LIMITS = { perRoot: 2, perRepository: 3 };
const ready = () => listCandidates(h.engine.db, LIMITS, []).map((c) => c.id);
const pending = (id: string) => (h.engine.db.prepare('SELECT deps_pending AS n FROM tasks WHERE id = ?').get(id) as { n: number }).n;

/** Drive one task through the state machine to `to` (completed, failed…) as a runner would. */
function finish(id: string, to: 'completed' | 'failed') {
  h.engine.write(() => {
    expect(claimTask(h.engine.db, id, 'test-runner')).toBe(true);
    transition(h.engine.db, id, 'starting', 'running');
    if (to === 'completed') {
      transition(h.engine.db, id, 'running', 'verifying');
      transition(h.engine.db, id, 'verifying', 'completed');
    } else transition(h.engine.db, id, 'running', 'failed', { fields: { errorCode: 'worker_failed', errorMessage: 'no' } });
  });
}

/** The pre-issue-13 definition of "runnable", as an oracle. */
function scanned(): string[] {
  return (
    h.engine.db
      .prepare(
        `SELECT t.id FROM tasks t WHERE t.status = 'queued' AND NOT EXISTS (
           SELECT 1 FROM task_deps d JOIN tasks p ON p.id = d.depends_on
           WHERE d.task_id = t.id AND p.status NOT IN ('completed', 'accepted'))
         ORDER BY t.priority DESC, t.id`,
      )
      .all() as { id: string }[]
  ).map((r) => r.id);
}

describe('the ready set', () => {
  it('follows dependencies through completion, acceptance, failure, blocking and retry', async () => {
    h = makeHome();
    const r = await h.call('delegate_batch', {
      tasks: [
        { ref: 'a', objective: 'a', workspace: h.repo },
        { ref: 'b', objective: 'b', workspace: h.repo, depends_on: ['a'] },
        { ref: 'c', objective: 'c', workspace: h.repo, depends_on: ['a', 'b'] },
        { ref: 'x', objective: 'x', workspace: h.repo },
        { ref: 'y', objective: 'y', workspace: h.repo, depends_on: ['x'] },
      ],
    });
    const [a, b, c, x, y] = r.tasks.map((t: { id: string }) => t.id);
    expect(ready().sort()).toEqual([a, x].sort());
    expect([pending(b), pending(c), pending(y)]).toEqual([1, 2, 1]);

    finish(a, 'completed');
    expect(ready()).toContain(b);
    expect(ready()).not.toContain(c);
    finish(b, 'completed');
    expect(ready()).toContain(c);
    // completed → accepted: still done, counted once (a count below zero would drop c from the set).
    h.engine.write(() => transition(h.engine.db, a, 'completed', 'accepted'));
    expect(pending(c)).toBe(0);
    expect(ready()).toContain(c);

    // A failed dependency blocks its dependent; a retry of it releases the dependent, still not ready.
    finish(x, 'failed');
    expect((h.engine.db.prepare('SELECT status FROM tasks WHERE id = ?').get(y) as { status: string }).status).toBe('blocked');
    await h.call('retry_task', { id: x, strategy: 'same' });
    expect((h.engine.db.prepare('SELECT status FROM tasks WHERE id = ?').get(y) as { status: string }).status).toBe('queued');
    expect(ready()).toContain(x);
    expect(ready()).not.toContain(y);
    finish(x, 'completed');
    expect(ready()).toContain(y);
    expect(ready().sort()).toEqual(scanned().sort());
  });

  it('a new task is found at once behind 2,000 queued tasks waiting on an approval, through the index', async () => {
    h = makeHome();
    const gate = (await h.call('delegate_task', { objective: 'needs a person', workspace: h.repo, kind: 'execute' })).task;
    expect(gate.status).toBe('awaiting_approval');
    for (let i = 0; i < 20; i++) {
      await h.call('delegate_batch', { tasks: Array.from({ length: 100 }, (_, j) => ({ objective: `held ${i}.${j}`, workspace: h.repo, depends_on: [gate.id] })) });
    }
    expect(ready()).toEqual([]);
    expect(isIdle(h.engine.db)).toBe(true); // waiting on a person is idle
    const fresh = (await h.call('delegate_task', { objective: 'new', workspace: h.repo })).task;
    expect(ready()).toEqual([fresh.id]);
    expect(scanned()).toEqual([fresh.id]);
    expect(isIdle(h.engine.db)).toBe(false);
    // The dispatch query reads the ready set's partial index, not every queued row.
    if (isPostgres(h.engine.db)) {
      h.engine.db.exec('ANALYZE tasks');
      const plan = h.engine.db.prepare(`EXPLAIN ${CANDIDATES_SQL}`).all('[]', '[]', '[]', 2, 3, 64) as { 'QUERY PLAN': string }[];
      expect(plan.map((r) => r['QUERY PLAN']).join('\n')).toMatch(/Index Scan using tasks_ready on tasks t/);
    } else {
      const plan = h.engine.db.prepare(`EXPLAIN QUERY PLAN ${CANDIDATES_SQL}`).all('[]', '[]', '[]', 2, 3, 64) as { detail: string }[];
      expect(plan[0].detail).toMatch(/^SCAN t USING (COVERING )?INDEX tasks_ready$/);
    }
    // Approving the gate makes it ready; its 2,000 dependents become ready once it completes.
    await h.call('approve_task', { id: gate.id });
    expect(ready()).toContain(gate.id);
    finish(gate.id, 'completed');
    expect(listCandidates(h.engine.db, { perRoot: 10_000, perRepository: 10_000 }, [], 5000)).toHaveLength(2001);
  });

  it('keeps the per-root and per-repository limits', async () => {
    h = makeHome();
    const r = await h.call('delegate_batch', { tasks: [0, 1, 2].map((i) => ({ objective: `t${i}`, workspace: h.repo })) });
    const [t0, t1, t2] = r.tasks.map((t: { id: string }) => t.id);
    h.engine.write(() => claimTask(h.engine.db, t0, 'runner'));
    expect(listCandidates(h.engine.db, { perRoot: 1, perRepository: 5 }, [])).toEqual([]);
    expect(listCandidates(h.engine.db, { perRoot: 5, perRepository: 1 }, [])).toEqual([]);
    expect(listCandidates(h.engine.db, { perRoot: 2, perRepository: 5 }, []).map((c) => c.id).sort()).toEqual([t1, t2].sort());
    expect(listCandidates(h.engine.db, LIMITS, ['mock'])).toEqual([]);
  });

  it('migration 006 counts the pending dependencies of an existing database', () => {
    const t = tempDir();
    try {
      const path = join(t.dir, 'old.db');
      const raw = new Database(path);
      for (const m of MIGRATIONS.slice(0, 4)) m.up(raw); // a database from before migrations 005 (requests) and 006
      raw.pragma('user_version = 4');
      const ins = raw.prepare(
        `INSERT INTO tasks (id, root_id, name, kind, objective, workspace, worker, mode, type, priority, timeout_s, status, created_at, updated_at)
         VALUES (?, ?, ?, 'explore', 'o', '/tmp', 'mock', 'auto_readonly', 'chore', 50, 60, ?, 0, 0)`,
      );
      ins.run('A', 'A', 'a', 'completed');
      ins.run('B', 'B', 'b', 'queued');
      ins.run('C', 'C', 'c', 'queued');
      raw.prepare('INSERT INTO task_deps (task_id, depends_on) VALUES (?, ?)').run('C', 'A');
      raw.prepare('INSERT INTO task_deps (task_id, depends_on) VALUES (?, ?)').run('C', 'B');
      raw.close();
      const db = openDb({ path });
      expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
      expect(db.prepare('SELECT id, deps_pending FROM tasks ORDER BY id').all()).toEqual([
        { id: 'A', deps_pending: 0 },
        { id: 'B', deps_pending: 0 },
        { id: 'C', deps_pending: 1 },
      ]);
      db.close();
    } finally {
      t.cleanup();
    }
  });
});
