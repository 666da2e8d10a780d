import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/env.js';
import { exited, until } from '../helpers/procs.js';
import { makeFleetHosts, type FleetHosts } from '../helpers/fleet-hosts.js';

/**
 * Nothing stays active for good in a fleet: a task whose end was never recorded — its runner stopped
 * (SIGTERM) or was lost with the write failing, or left no runner row at all — is orphaned by a live
 * runner within a lease, and `cancel` ends any active task, whether its runner is gone or alive but no
 * longer running it.
 */
const url = process.env.LIGHTWORKER_TEST_PG_URL;
if (!url) throw new Error(`the fleet tests run in the postgres project (a test PostgreSQL): ${process.env.LIGHTWORKER_TEST_PG_SKIP ?? 'LIGHTWORKER_TEST_PG_URL unset'}`);

let t: ReturnType<typeof tempDir>;
let fleet: FleetHosts;

beforeAll(() => {
  t = tempDir('lw-stranded-');
  fleet = makeFleetHosts(t.dir, url, { hosts: ['host-a', 'host-b'] });
});

afterAll(async () => {
  await fleet?.close();
  t?.cleanup();
});

/** Put a task back to `status` under `runnerId`, as a run whose end write never landed leaves it. */
function strand(id: string, status: string, runnerId: string): void {
  fleet.laptop.db.prepare(`UPDATE tasks SET status = ?, runner_id = ?, ended_at = NULL, pid = NULL WHERE id = ?`).run(status, runnerId, id);
}

describe('stranded tasks in a fleet', () => {
  let stoppedRunner: string;
  let ids: string[];

  it('cancel ends an active task whose runner is gone at once (no live runner needed)', async () => {
    fleet.start('host-a');
    ids = await fleet.submit(4, { sleep_ms: 50 });
    await until(() => ids.every((id) => fleet.status(id).status === 'completed'), 30_000, 'the tasks to complete on a');
    stoppedRunner = fleet.runnerOf('host-a')!.id;
    fleet.runners['host-a'].kill('SIGTERM');
    await exited(fleet.runners['host-a']);
    expect(fleet.runnerOf('host-a')!.state).toBe('stopped');
    strand(ids[0], 'running', stoppedRunner);
    const r = await fleet.call('cancel_task', { id: ids[0] });
    expect(r.task.status).toBe('cancelled');
    expect(fleet.status(ids[0]).status).toBe('cancelled');
  }, 60_000);

  it('a task left running or verifying under a stopped runner, or under a runner without a row, is orphaned by a live runner within a lease', async () => {
    strand(ids[1], 'running', stoppedRunner);
    strand(ids[2], 'verifying', stoppedRunner);
    strand(ids[3], 'starting', 'a-runner-that-left-no-row');
    fleet.start('host-b');
    await until(() => [1, 2, 3].every((i) => fleet.status(ids[i]).status === 'orphaned'), 15_000, () => `the stranded tasks to be orphaned: ${JSON.stringify([1, 2, 3].map((i) => fleet.status(ids[i]).status))}`);
    // Orphans take a resume: each continues and completes.
    for (const i of [1, 2, 3]) await fleet.call('retry_task', { id: ids[i], strategy: 'resume' });
    await until(() => [1, 2, 3].every((i) => fleet.status(ids[i]).status === 'completed'), 30_000, 'the resumed tasks to complete');
  }, 60_000);

  it('cancel ends an active task its live runner owns but no longer runs (its end write never landed)', async () => {
    const [id] = await fleet.submit(1, { sleep_ms: 50 });
    await until(() => fleet.status(id).status === 'completed', 30_000, 'the task to complete on b');
    strand(id, 'running', fleet.runnerOf('host-b')!.id);
    await fleet.call('cancel_task', { id });
    await until(() => fleet.status(id).status === 'cancelled', 15_000, () => `b to end the task it no longer runs: ${JSON.stringify(fleet.status(id))}`);
  }, 60_000);
});
