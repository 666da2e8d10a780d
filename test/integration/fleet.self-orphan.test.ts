import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/env.js';
import { isAlive, until } from '../helpers/procs.js';
import { makeFleetHosts, type FleetHosts } from '../helpers/fleet-hosts.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * A runner that fenced itself (it could not renew its lease, so it killed its workers) and then reached the
 * server again: its loss is no fault of the task, which resumes by itself (not counted against the retry
 * budget) and completes, with no person retrying it. One runner only, so only the runner itself, joining
 * again, can recover the task.
 */
const url = process.env.LIGHTWORKER_TEST_PG_URL;
if (!url) throw new Error(`the fleet tests run in the postgres project (a test PostgreSQL): ${process.env.LIGHTWORKER_TEST_PG_SKIP ?? 'LIGHTWORKER_TEST_PG_URL unset'}`);

let t: ReturnType<typeof tempDir>;
let fleet: FleetHosts;
let proxy: TcpProxy;

beforeAll(async () => {
  t = tempDir('lw-selforphan-');
  proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(url).port) });
  fleet = makeFleetHosts(t.dir, url, { hosts: ['host-a'], portOf: (h) => (h === 'host-a' ? proxy.port : undefined), autoResume: true });
});

afterAll(async () => {
  await fleet?.close();
  await proxy?.close();
  t?.cleanup();
});

function moves(id: string): string[] {
  return (fleet.laptop.db.prepare(`SELECT payload FROM events WHERE task_id = ? AND type = 'task.status' ORDER BY seq`).all(id) as { payload: string }[]).map((r) => {
    const p = JSON.parse(r.payload) as { to: string; strategy?: string };
    return p.strategy ? `${p.to}(${p.strategy})` : p.to;
  });
}

describe('a runner that orphans its own task after fencing itself', () => {
  it('its server silent until its worker was killed, then back: the task resumes by itself and completes', async () => {
    fleet.start('host-a');
    const [id] = await fleet.submit(1, { sleep_ms: 5000 });
    await until(() => fleet.status(id).status === 'running' && fleet.beats().some((b) => b.task === id), 30_000, () => `the task to run: ${JSON.stringify(fleet.status(id))}`);
    const worker = fleet.beats().find((b) => b.task === id)!.pid;
    proxy.blackhole();
    try {
      await until(() => !isAlive(worker), 30_000, 'the runner to kill its worker (self-fence)');
    } finally {
      await proxy.restore();
    }
    await until(() => fleet.status(id).status === 'completed', 60_000, () => `the task to complete: ${JSON.stringify(fleet.status(id))} after ${moves(id).join(' ')}\n${fleet.stderr['host-a']()}`);
    expect(moves(id)).toContain('queued(auto_resume)');
    expect(fleet.status(id).attempt).toBe(2);
  }, 120_000);
});
