import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/env.js';
import { isAlive, until } from '../helpers/procs.js';
import { makeFleetHosts, type FleetHosts } from '../helpers/fleet-hosts.js';
import { fillDisk, freeDisk } from '../helpers/damage.js';
import { startTestPostgres, watchExitHooks, type TestPostgres } from '../helpers/postgres.js';
import { mountPgDisk, type PgDisk } from '../chaos/fleet-pg-disk.js';

/**
 * The PostgreSQL server's own disk full (its data folder on a small tmpfs, filled to the last byte; root
 * only) while a fleet runner's tasks end: the end writes fail on the server, not in the home. Once space
 * returns every task must end (none left `running` for good under a healthy runner, holding its slot), the
 * runner must live on, and a cancel sent while the disk was full must either be refused saying so or end
 * its task.
 */
if (!process.env.LIGHTWORKER_TEST_PG_URL) throw new Error(`the fleet tests run in the postgres project (a test PostgreSQL): ${process.env.LIGHTWORKER_TEST_PG_SKIP ?? 'LIGHTWORKER_TEST_PG_URL unset'}`);

const mounted = mountPgDisk(160);
const disk: PgDisk | null = 'reason' in mounted ? null : mounted;
if (!disk) {
  const why = (mounted as { reason: string }).reason;
  if (process.env.CI === 'true' && process.getuid?.() === 0) throw new Error(`the server full-disk tests need a small file system (CI runs as root): ${why}`);
  process.stderr.write(`fleet.full-disk: skipped: ${why}\n`);
}

let t: ReturnType<typeof tempDir>;
let pg: TestPostgres | null = null;
let fleet: FleetHosts;
let ballast: string | null = null;

beforeAll(async () => {
  if (!disk) return;
  const drop = watchExitHooks();
  try {
    pg = await startTestPostgres({ parent: disk.dir, settings: ['max_wal_size=64MB', 'min_wal_size=32MB'] });
  } finally {
    drop();
  }
  t = tempDir('lw-pgfull-');
  fleet = makeFleetHosts(t.dir, pg.url, { hosts: ['host-a'], leaseOf: () => 4000 });
}, 120_000);

afterAll(async () => {
  if (ballast) freeDisk(ballast);
  await fleet?.close();
  await pg?.stop();
  disk?.unmount();
  t?.cleanup();
}, 60_000);

describe.skipIf(!disk)("the server's disk full under a fleet runner", () => {
  it('every task ends once space returns, the runner lives on, and a cancel sent meanwhile is refused saying so or ends its task', async () => {
    const runner = fleet.start('host-a');
    // A large answer each: the completing write needs new pages (its spec travels in argv: under 128 KiB), which a full disk refuses.
    const ids = await fleet.submit(4, { sleep_ms: 3000, text: randomBytes(60_000).toString('base64') });
    await until(() => new Set(fleet.beats().map((b) => b.task)).size === 4, 60_000, 'four workers beating');
    ballast = fillDisk(disk!.dir);
    // Every worker ends while the disk is full: their end writes meet it.
    await until(() => fleet.beats().every((b) => !isAlive(b.pid)), 30_000, 'the workers to end');
    // The fault bit: ends could not be written while the disk stayed full.
    expect(ids.some((id) => fleet.status(id).status === 'running')).toBe(true);
    const target = ids.find((id) => fleet.status(id).status === 'running')!;
    let cancelled: string | null = null;
    try {
      await fleet.call('cancel_task', { id: target });
      cancelled = target;
    } catch (err) {
      expect((err as Error).message).toMatch(/disk|space/i);
    }
    // Full a while longer: the runner retries the ends meanwhile.
    await new Promise((r) => setTimeout(r, 3000));
    freeDisk(ballast);
    ballast = null;
    const ended = (id: string) => !['queued', 'starting', 'running', 'verifying'].includes(fleet.status(id).status);
    await until(() => ids.every(ended), 30_000, () => `every task to end once space returned: ${JSON.stringify(ids.map((id) => fleet.status(id)))}; runner stderr: ${fleet.stderr['host-a']().slice(-1500)}`);
    for (const id of ids) expect(fleet.status(id).status).toEqual(id === cancelled ? expect.stringMatching(/cancelled|completed/) : 'completed');
    expect(runner.exitCode).toBeNull();
    // It said what was full (once), and that it can write again.
    expect(fleet.stderr['host-a']()).toMatch(/the PostgreSQL store cannot be written: the server's disk is full/);
    // The runner's slots are free again: new work runs.
    const [next] = await fleet.submit(1, { sleep_ms: 10 });
    await until(() => fleet.status(next).status === 'completed', 30_000, 'a task after the full disk to complete');
  }, 180_000);
});
