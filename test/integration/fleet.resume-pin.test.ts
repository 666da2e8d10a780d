import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/env.js';
import { exited, until } from '../helpers/procs.js';
import { makeFleetHosts, type FleetHosts } from '../helpers/fleet-hosts.js';

/**
 * In a fleet an execute task's worktree and native session live on the host whose runner ran it. A new
 * attempt a person asks for that continues them — `retry --strategy resume`, a follow-up, a reverify — is
 * claimed only by a runner on that host; while none is up there the task stays queued and says which host
 * it waits for, rather than a runner elsewhere starting it from the base (the work it was asked to continue
 * lost, a reverify judging a tree without the change). A fresh attempt (`retry --strategy same`) goes to
 * any runner. Automatic resume is off here: these orphans are resumed by hand.
 */
const url = process.env.LIGHTWORKER_TEST_PG_URL;
if (!url) throw new Error(`the fleet tests run in the postgres project (a test PostgreSQL): ${process.env.LIGHTWORKER_TEST_PG_SKIP ?? 'LIGHTWORKER_TEST_PG_URL unset'}`);

let t: ReturnType<typeof tempDir>;
let fleet: FleetHosts;

beforeAll(() => {
  t = tempDir('lw-resumepin-');
  fleet = makeFleetHosts(t.dir, url, { hosts: ['host-a', 'host-b'] });
});

afterAll(async () => {
  await fleet?.close();
  t?.cleanup();
});

const clone = () => join(t.dir, 'laptop', 'src', 'api');

function events(id: string, type: string): Record<string, unknown>[] {
  return (fleet.laptop.db.prepare('SELECT payload FROM events WHERE task_id = ? AND type = ? ORDER BY seq').all(id, type) as { payload: string }[]).map((r) => JSON.parse(r.payload));
}

const placedHosts = (id: string) => events(id, 'fleet.placed').map((p) => p.host);
const sessionOf = (id: string) => (events(id, 'worker.started').at(-1)?.sessionId as string | undefined) ?? null;
const waitingFor = async (id: string) => ((await fleet.call('get_task', { id })) as { task: { waitingFor?: string } }).task.waitingFor;
const trail = (id: string) => JSON.stringify(fleet.laptop.db.prepare('SELECT type, payload FROM events WHERE task_id = ? ORDER BY seq').all(id), null, 1);

async function stop(host: string): Promise<void> {
  const c = fleet.runners[host];
  if (c && c.exitCode === null && c.signalCode === null) {
    c.kill('SIGTERM');
    await exited(c);
  }
}

/** b serves on: a task submitted now completes there, so b has had every chance to claim what was queued before it. */
async function bServedAnother(): Promise<void> {
  const [later] = await fleet.submit(1, {});
  await until(() => fleet.status(later).status === 'completed', 30_000, () => `a later task to complete on b: ${JSON.stringify(fleet.status(later))}\n${fleet.stderr['host-b']()}`);
  expect(placedHosts(later)).toEqual(['host-b']);
}

/** a is back: `id` is claimed there, in the worktree it left, and completes attempt `attempt`. */
async function completesOnA(id: string, attempt: number): Promise<void> {
  fleet.start('host-a');
  await until(() => fleet.status(id).status === 'completed' && fleet.status(id).attempt === attempt, 30_000, () => `${id} to complete on a: ${JSON.stringify(fleet.status(id))}\n${trail(id)}`);
  expect(placedHosts(id).at(-1)).toBe('host-a');
  expect(events(id, 'worktree.not_kept')).toEqual([]);
  expect(events(id, 'worktree.kept').length).toBeGreaterThanOrEqual(attempt - 1);
}

describe('a resumed execute task in a fleet runs on the host holding its worktree', () => {
  let kept: string;

  it('retry --strategy resume of an orphan waits for its host (saying so) while another host is up, then continues its session there; a fresh retry runs anywhere', async () => {
    fleet.start('host-a');
    const r = (await fleet.call('delegate_batch', {
      tasks: [
        { objective: 'api keep', workspace: clone(), kind: 'execute', mode: 'auto_execute', verify: [['test', '-f', 'kept.txt']], metadata: { mock: { beat_log: fleet.beatLog, write_files: { 'kept.txt': 'kept\n' }, sleep_ms: 60_000, followup: { sleep_ms: 200 } } } },
        { objective: 'api fresh', workspace: clone(), kind: 'execute', mode: 'auto_execute', metadata: { mock: { beat_log: fleet.beatLog, fail_message: 'the model refused' } } },
      ],
    })) as { tasks: { id: string }[] };
    [kept] = r.tasks.map((x) => x.id);
    const fresh = r.tasks[1].id;
    await until(() => fleet.status(kept).status === 'running' && sessionOf(kept) !== null && fleet.status(fresh).status === 'failed', 30_000, () => `one to run and one to fail on a: ${JSON.stringify([kept, fresh].map(fleet.status))}`);
    const session = sessionOf(kept);
    fleet.runners['host-a'].kill('SIGKILL');
    await exited(fleet.runners['host-a']);
    fleet.start('host-b');
    await until(() => fleet.status(kept).status === 'orphaned', 30_000, () => `the running one to be orphaned by b: ${JSON.stringify(fleet.status(kept))}`);

    await fleet.call('retry_task', { id: kept, strategy: 'resume' });
    await fleet.call('retry_task', { id: fresh, strategy: 'same' });
    // The fresh attempt needs nothing of a's: b runs it (and its worker refuses again), in a new worktree.
    await until(() => fleet.status(fresh).status === 'failed' && fleet.status(fresh).attempt === 2, 30_000, () => `the fresh retry to run on b: ${trail(fresh)}`);
    expect(placedHosts(fresh)).toEqual(['host-a', 'host-b']);
    await bServedAnother();
    // The resume does not: it waits for a, and says so.
    expect(fleet.status(kept)).toMatchObject({ status: 'queued', attempt: 2 });
    expect(placedHosts(kept)).toEqual(['host-a']);
    expect(await waitingFor(kept)).toMatch(/worktree is on host host-a, where no live runner is/);

    await completesOnA(kept, 2);
    expect(events(kept, 'task.resumed').at(-1)).toMatchObject({ mode: 'session', keptWorktree: true });
    expect(sessionOf(kept)).toBe(session);
    expect(fleet.overlaps()).toEqual([]);
  }, 150_000);

  it('a follow-up and a reverify wait for the host holding the worktree too, and run there', async () => {
    await stop('host-a');
    await fleet.call('followup_task', { id: kept, message: 'one more thing' });
    await bServedAnother();
    expect(fleet.status(kept)).toMatchObject({ status: 'queued', attempt: 3 });
    expect(await waitingFor(kept)).toMatch(/worktree is on host host-a/);
    await completesOnA(kept, 3);

    await stop('host-a');
    await fleet.call('reverify_task', { id: kept });
    await bServedAnother();
    expect(fleet.status(kept)).toMatchObject({ status: 'queued', attempt: 4 });
    expect(await waitingFor(kept)).toMatch(/worktree is on host host-a/);
    // Verified in the worktree holding kept.txt (a fresh tree from the base has no such file and fails).
    await completesOnA(kept, 4);
    // The pin held for each attempt only: none is left once it ended.
    expect(fleet.laptop.db.prepare('SELECT key FROM settings WHERE key = ?').get(`run_host.${kept}`)).toBeUndefined();
  }, 150_000);
});
