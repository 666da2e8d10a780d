import { afterEach, describe, expect, it } from 'vitest';
import { isPostgres, type Db } from '../../main/store/db.js';
import { Engine } from '../../main/engine.js';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { captureStderr, exited, until } from '../helpers/procs.js';
import { startCli } from '../helpers/cli.js';

/**
 * A PostgreSQL store whose connections drop (a server restart, a failover, an idle-connection killer)
 * reconnects between transactions and listens again: the next command works and other processes'
 * commits keep arriving. Runs in the postgres project (on SQLite there is no connection to lose).
 */
let h: TestHome | null = null;

/** Terminate this home's LightWorker connections but `db`'s own (its schema is in the application name: other test files share the server). */
function cutConnections(db: Db): number {
  return (db.prepare(`SELECT COUNT(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE application_name = 'lightworker/' || current_schema() AND pid <> pg_backend_pid()`).get() as { n: number }).n;
}
afterEach(() => {
  h?.cleanup();
  h = null;
});

describe('the PostgreSQL store after its connections drop', () => {
  it('reconnects between transactions, and LISTENs again', async () => {
    h = makeHome();
    expect(isPostgres(h.engine.db)).toBe(true); // a postgres-project test (store.pg-*)
    h.engine.watch();
    await h.call('delegate_task', { objective: 'before', workspace: h.repo });
    const other = h.connect();
    try {
        expect(cutConnections(other)).toBeGreaterThanOrEqual(2); // the engine's query and LISTEN connections
      await new Promise((r) => setTimeout(r, 200));
      const after = await h.call('delegate_task', { objective: 'after', workspace: h.repo });
      expect(after.task.status).toBe('queued');
      // Another process's commit still reaches this engine's event stream.
      const seen: string[] = [];
      h.engine.events.on('event', (e: { type: string; payload: { name?: string } }) => {
        if (e.type === 'task.created' && e.payload.name) seen.push(e.payload.name);
      });
      await new Promise((r) => setTimeout(r, 2500)); // past the relisten backoff
      const elsewhere = new Engine({ home: h.home });
      try {
        await runCommand(COMMANDS, { engine: elsewhere, face: 'cli', depth: 0 }, 'delegate_task', { objective: 'from elsewhere', workspace: h.repo });
      } finally {
        elsewhere.close();
      }
      await until(() => seen.includes('from elsewhere'), 10_000, 'the other connection’s task to be published');
    } finally {
      other.close();
    }
  });

  it('a runner whose connections drop mid-work keeps running and finishes new work', async () => {
    h = makeHome();
    const runner = startCli(['run'], { home: h.home });
    const stderr = captureStderr(runner);
    const other = h.connect();
    try {
      await until(() => (other.prepare(`SELECT COUNT(*) AS n FROM runners WHERE state = 'active'`).get() as { n: number }).n === 1, 20_000, 'the runner to register');
      const done = async (objective: string) => {
        const id = (await h!.call('delegate_task', { objective, workspace: h!.repo })).task.id as string;
        await until(() => (other.prepare('SELECT status FROM tasks WHERE id = ?').get(id) as { status: string }).status === 'completed', 30_000, `${objective} to complete (${stderr()})`);
      };
      await done('before the cut');
      // Cut its connections again and again while 30 tasks run: queries fail in flight.
      const ids = (await h.call('delegate_batch', { tasks: Array.from({ length: 30 }, (_, i) => ({ objective: `busy ${i}`, workspace: h!.repo, metadata: { mock: { sleep_ms: 50 } } })) })).tasks.map((t: { id: string }) => t.id);
      for (let i = 0; i < 15; i++) {
        cutConnections(other);
        await new Promise((r) => setTimeout(r, 80));
      }
      const TERMINAL = ['completed'];
      const statusOf = (id: string) => (other.prepare('SELECT status FROM tasks WHERE id = ?').get(id) as { status: string }).status;
      try {
        await until(() => ids.every((id: string) => TERMINAL.includes(statusOf(id))), 40_000, 'every task to complete, none stuck');
      } catch (err) {
        throw new Error(`${(err as Error).message}: ${JSON.stringify(ids.map(statusOf))}, runner exit ${runner.exitCode}\n${stderr().replace(/\r/g, '\n').split('\n').filter((l) => !/^leading|completed {2}\(verified\)/.test(l)).slice(-40).join('\n')}`);
      }
      await done('after the cuts');
      expect(runner.exitCode).toBeNull();
      expect(stderr()).not.toMatch(/Uncaught|PgError|terminating connection/);
    } finally {
      other.close();
      runner.kill('SIGTERM');
      await exited(runner);
    }
  });
});
