import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/env.js';
import { exited, until } from '../helpers/procs.js';
import { makeFleetHosts, type FleetHosts } from '../helpers/fleet-hosts.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * Self-fencing: a runner that cannot renew its lease has its workers killed before the lease can expire,
 * whatever its own process is doing (frozen by SIGSTOP, or blocked in a store call whose server went
 * silent). Measured by the workers' own side log (a beat every 50 ms): after the fleet orphans the task
 * and a resume runs it on another runner, no beat of the first attempt comes after the second's first.
 * Runner a reaches the server through a loopback proxy the test cuts or makes silent; b talks to it directly.
 */
const url = process.env.LIGHTWORKER_TEST_PG_URL;
if (!url) throw new Error(`the fleet tests run in the postgres project (a test PostgreSQL): ${process.env.LIGHTWORKER_TEST_PG_SKIP ?? 'LIGHTWORKER_TEST_PG_URL unset'}`);

let t: ReturnType<typeof tempDir>;
let fleet: FleetHosts;
let proxy: TcpProxy;

beforeAll(async () => {
  t = tempDir('lw-selffence-');
  proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(url).port) });
  fleet = makeFleetHosts(t.dir, url, { hosts: ['host-a', 'host-b'], portOf: (h) => (h === 'host-a' ? proxy.port : undefined),
    // b must stay healthy while a is faulted, on a machine loaded by other tests: a longer lease.
    leaseOf: (h) => (h === 'host-b' ? 8000 : undefined),
  });
});

afterAll(async () => {
  for (const c of Object.values(fleet?.runners ?? {})) if (c.signalCode === null && c.exitCode === null) c.kill('SIGCONT');
  await fleet?.close();
  await proxy?.close();
  t?.cleanup();
});

async function stopRunner(name: string): Promise<void> {
  const c = fleet.runners[name];
  if (!c || c.exitCode !== null || c.signalCode !== null) return;
  c.kill('SIGKILL');
  await exited(c);
}

/** One long task running on a's runner (b stopped meanwhile, then started again), with its first attempt. */
async function taskOnA(): Promise<{ id: string; attempt: number; runnerId: string }> {
  await stopRunner('host-b');
  if (!fleet.runners['host-a'] || fleet.runners['host-a'].exitCode !== null || fleet.runners['host-a'].signalCode !== null) fleet.start('host-a');
  const [id] = await fleet.submit(1, { sleep_ms: 6000 });
  await until(() => fleet.status(id).status === 'running' && fleet.beats().some((b) => b.task === id), 30_000, () => `the task to run on a: ${JSON.stringify(fleet.status(id))}`);
  expect(fleet.hostOfRunner(fleet.status(id).runnerId)).toBe('host-a');
  fleet.start('host-b');
  const { attempt, runnerId } = fleet.status(id);
  return { id, attempt, runnerId: runnerId! };
}

/**
 * The first attempt's worker beat for the last time before its runner's lease expired (by the expiry the
 * runner itself wrote): it was dead before any other runner could find the lease gone.
 */
function diedBeforeExpiry(id: string, attempt: number, runnerId: string): void {
  const row = fleet.laptop.db.prepare('SELECT expires_at AS "expiresAt" FROM runners WHERE id = ?').get(runnerId) as { expiresAt: number };
  const last = Math.max(...fleet.beats().filter((b) => b.task === id && b.attempt === attempt).map((b) => b.at));
  expect(last, `the first attempt's last beat, ms before the lease expiry: ${row.expiresAt - last}`).toBeLessThan(row.expiresAt);
}

/** The fleet orphans a's task; a resume runs it on b to its end. Returns the overlaps the beats show. */
async function resumeOnB(id: string, attempt: number, runnerId: string): Promise<{ task: string; ms: number }[]> {
  await until(() => fleet.status(id).status === 'orphaned', 30_000, () => `a's task to be orphaned: ${JSON.stringify(fleet.status(id))}; runners ${JSON.stringify(fleet.laptop.db.prepare('SELECT id, host, state, expires_at AS "expiresAt" FROM runners ORDER BY started_at').all())} at ${Date.now()}\nb: ${fleet.stderr['host-b']()}\na: ${fleet.stderr['host-a']()}`);
  diedBeforeExpiry(id, attempt, runnerId);
  await fleet.call('retry_task', { id, strategy: 'resume' });
  await until(() => fleet.beats().some((b) => b.task === id && b.attempt === attempt + 1), 30_000, () => `the resumed attempt to run on b: ${JSON.stringify(fleet.status(id))}`);
  expect(fleet.hostOfRunner(fleet.status(id).runnerId)).toBe('host-b');
  return fleet.overlaps().filter((o) => o.task === id);
}

async function resumedCompletes(id: string, attempt: number): Promise<void> {
  await until(() => fleet.status(id).status === 'completed', 40_000, () => `the resumed attempt to complete: ${JSON.stringify(fleet.status(id))}`);
  // b, healthy all along (busy only with the machine's load), was never fenced.
  expect(fleet.stderr['host-b']()).not.toContain('could not renew its lease');
  expect(fleet.status(id).attempt).toBe(attempt + 1);
  expect(fleet.overlaps().filter((o) => o.task === id)).toEqual([]);
}

describe('a runner that cannot renew its lease stops its workers before the lease can expire', () => {
  it('frozen (SIGSTOP) past its lease: its worker is dead before the fleet orphans the task; no two attempts overlap', async () => {
    const { id, attempt, runnerId } = await taskOnA();
    const a = fleet.runners['host-a'];
    a.kill('SIGSTOP');
    try {
      expect(await resumeOnB(id, attempt, runnerId)).toEqual([]);
    } finally {
      a.kill('SIGCONT');
    }
    await resumedCompletes(id, attempt);
  }, 120_000);

  it('its connection cut: the same, and it joins the fleet again once the server is back', async () => {
    const { id, attempt, runnerId } = await taskOnA();
    const before = fleet.runnerOf('host-a')!.id;
    await proxy.cut();
    try {
      expect(await resumeOnB(id, attempt, runnerId)).toEqual([]);
    } finally {
      await proxy.restore();
    }
    await resumedCompletes(id, attempt);
    await until(() => { const r = fleet.runnerOf('host-a'); return r !== undefined && r.id !== before && r.state === 'active'; }, 30_000, 'a to join again');
  }, 120_000);

  it('its server silent (a black hole: every call blocks its event loop): the same', async () => {
    const { id, attempt, runnerId } = await taskOnA();
    proxy.blackhole();
    try {
      expect(await resumeOnB(id, attempt, runnerId)).toEqual([]);
    } finally {
      await proxy.restore();
    }
    await resumedCompletes(id, attempt);
  }, 120_000);
});
