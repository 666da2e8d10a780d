import { afterEach, describe, expect, it } from 'vitest';
import { isPostgres } from '../../main/store/db.js';
import { Engine } from '../../main/engine.js';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { until } from '../helpers/procs.js';

/**
 * A PostgreSQL store whose connections drop (a server restart, a failover, an idle-connection killer)
 * reconnects between transactions and listens again: the next command works and other processes'
 * commits keep arriving. Runs in the postgres project (on SQLite there is no connection to lose).
 */
let h: TestHome | null = null;
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
      // Cut every LightWorker connection but the one asking.
      const cut = () => other.prepare(`SELECT COUNT(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE application_name = 'lightworker' AND pid <> pg_backend_pid()`).get() as { n: number };
      expect(cut().n).toBeGreaterThanOrEqual(2); // the engine's query and LISTEN connections
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
});
