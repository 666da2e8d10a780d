import { afterEach, describe, expect, it } from 'vitest';
import { isPostgres } from '../../main/store/db.js';
import { fleetIdentity, registerRunner } from '../../main/scheduler/fleet.js';
import { makeHome, type TestHome } from '../helpers/env.js';

/**
 * A runner frozen (SIGSTOP, a closed lid) or cut off in the middle of a transaction leaves its session idle
 * in that transaction, holding its row locks: its runner row, a task's row, the fleet's claim lock. The
 * server ends such a session after a few seconds, so every other runner's reaping and claims go on; before,
 * they waited until the server's TCP keepalive noticed (hours). Runs in the postgres project.
 */
let h: TestHome | null = null;
afterEach(() => {
  h?.cleanup();
  h = null;
});

describe('a session left idle in a transaction', () => {
  it('is ended by the server within seconds: another connection gets the row it had locked', () => {
    h = makeHome();
    expect(isPostgres(h.engine.db)).toBe(true); // a postgres-project test (store.pg-*)
    const db = h.engine.db;
    h.engine.write(() => registerRunner(db, 'frozen-runner', fleetIdentity(h!.engine.config), 4, 60_000));
    const frozen = h.connect();
    try {
      // What a runner stopped mid-transaction leaves: its runner row locked, nothing more sent.
      frozen.exec('BEGIN');
      frozen.prepare(`UPDATE runners SET heartbeat_at = heartbeat_at + 1 WHERE id = 'frozen-runner'`).run();
      const began = Date.now();
      // Another runner marks it lost: blocks on the row lock until the frozen session is ended.
      const changed = db.prepare(`UPDATE runners SET state = 'lost' WHERE id = 'frozen-runner' AND state = 'active'`).run().changes;
      expect(changed).toBe(1);
      expect(Date.now() - began).toBeLessThan(20_000);
    } finally {
      try {
        frozen.close();
      } catch {
        // its session was ended by the server
      }
    }
  }, 60_000);
});
