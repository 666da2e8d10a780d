import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/env.js';
import { exited, isAlive, until } from '../helpers/procs.js';
import { makeFleetHosts, type FleetHosts } from '../helpers/fleet-hosts.js';
import { claimFleetTask, fleetIdentity, registerRunner } from '../../main/scheduler/fleet.js';

/**
 * Fencing in a fleet: a runner's writes for a task hold only while the task is still the attempt that
 * runner claimed. A runner frozen past its lease (SIGSTOP: a laptop lid, a long pause) wakes after its
 * task was orphaned and resumed on another runner: it must not end that newer attempt, nor kill its
 * processes; a runner the fleet marked lost claims nothing.
 */
const url = process.env.LIGHTWORKER_TEST_PG_URL;
if (!url) throw new Error(`the fleet tests run in the postgres project (a test PostgreSQL): ${process.env.LIGHTWORKER_TEST_PG_SKIP ?? 'LIGHTWORKER_TEST_PG_URL unset'}`);

let t: ReturnType<typeof tempDir>;
let fleet: FleetHosts;

beforeAll(() => {
  t = tempDir('lw-fence-');
  fleet = makeFleetHosts(t.dir, url, { hosts: ['host-a', 'host-b'] });
});

afterAll(async () => {
  for (const c of Object.values(fleet?.runners ?? {})) if (c.signalCode === null && c.exitCode === null) c.kill('SIGCONT');
  await fleet?.close();
  t?.cleanup();
});

/** The mock worker's `tick ATTEMPT N` messages in the task's log, with their seq. */
function ticksOf(id: string): { seq: number; attempt: number }[] {
  const rows = fleet.laptop.db.prepare(`SELECT seq, payload FROM events WHERE task_id = ? AND type = 'worker.message' ORDER BY seq`).all(id) as { seq: number; payload: string }[];
  return rows.flatMap((r) => {
    const m = /^tick (\d+) /.exec((JSON.parse(r.payload) as { text?: string }).text ?? '');
    return m ? [{ seq: r.seq, attempt: Number(m[1]) }] : [];
  });
}

describe('fenced attempts in a fleet', () => {
  it('a runner woken after its task was orphaned and resumed elsewhere leaves the newer attempt alone: it completes on the other runner', async () => {
    fleet.start('host-a');
    fleet.start('host-b');
    // The worker says which attempt it is every 50 ms: a frozen runner holds what its worker said unread.
    const [id] = await fleet.submit(1, { sleep_ms: 8000, tick_ms: 50 });
    await until(() => fleet.status(id).status === 'running' && ticksOf(id).length > 0, 30_000, 'the task to run');
    const first = fleet.status(id);
    const frozenHost = fleet.hostOfRunner(first.runnerId)!;
    const otherHost = frozenHost === 'host-a' ? 'host-b' : 'host-a';
    const frozen = fleet.runners[frozenHost];
    frozen.kill('SIGSTOP');
    try {
      await until(() => fleet.status(id).status === 'orphaned', 20_000, 'the frozen runner’s task to be orphaned');
      await fleet.call('retry_task', { id, strategy: 'resume' });
      await until(() => fleet.status(id).status === 'running' && fleet.status(id).attempt === first.attempt + 1, 20_000, () => `the resumed attempt to run: ${JSON.stringify(fleet.status(id))}`);
    } finally {
      frozen.kill('SIGCONT');
    }
    const second = fleet.status(id);
    expect(fleet.hostOfRunner(second.runnerId)).toBe(otherHost);
    const livePid = () => fleet.beats().filter((b) => b.task === id && b.attempt === second.attempt).at(-1)?.pid ?? 0;
    await until(() => livePid() > 0, 20_000, 'the resumed attempt’s worker to beat');
    // The woken runner finds its lease gone, stops what it ran and joins again under a new id.
    await until(() => { const r = fleet.runnerOf(frozenHost); return r !== undefined && r.id !== first.runnerId && r.state === 'active'; }, 30_000, 'the woken runner to join again');
    // Its stale end (orphaned, its processes killed) touched neither the newer attempt nor its worker.
    expect(fleet.status(id)).toMatchObject({ attempt: second.attempt, runnerId: second.runnerId });
    expect(['running', 'verifying', 'completed']).toContain(fleet.status(id).status);
    expect(isAlive(livePid()) || fleet.status(id).status === 'completed').toBe(true);
    await until(() => !['running', 'verifying', 'starting'].includes(fleet.status(id).status), 30_000, 'the resumed attempt to end');
    expect(fleet.status(id)).toMatchObject({ status: 'completed', attempt: second.attempt });
    const ends = fleet.laptop.db.prepare(`SELECT payload FROM events WHERE task_id = ? AND type = 'task.status' ORDER BY seq`).all(id) as { payload: string }[];
    const moves = ends.map((e) => JSON.parse(e.payload) as { from: string; to: string; attempt?: number });
    // Exactly one orphaning: the fleet's, of the first attempt; nothing after the resume but its own moves.
    expect(moves.filter((m) => m.to === 'orphaned')).toHaveLength(1);
    // Nor did its worker's late output reach the log: no event of the first attempt after the resume.
    const resumedAt = (fleet.laptop.db.prepare(`SELECT seq FROM events WHERE task_id = ? AND type = 'task.status' AND payload LIKE '%"strategy":"resume"%' ORDER BY seq LIMIT 1`).get(id) as { seq: number }).seq;
    const stale = ticksOf(id).filter((e) => e.attempt === first.attempt && e.seq > resumedAt);
    expect(stale, `ticks of attempt ${first.attempt} after the resume (seq ${resumedAt})`).toEqual([]);
    expect(ticksOf(id).some((e) => e.attempt === second.attempt)).toBe(true);
  }, 120_000);

  it('a runner the fleet marked lost claims nothing: the claim checks the runner is active and its lease valid, in its own transaction', async () => {
    // Hold the fleet's own runners off this task: stop them first (SIGTERM, a clean stop).
    for (const c of Object.values(fleet.runners)) c.kill('SIGTERM');
    await Promise.all(Object.values(fleet.runners).map((c) => exited(c)));
    const [id] = await fleet.submit(1, { sleep_ms: 10 });
    const db = fleet.laptop.db;
    const me = fleetIdentity(fleet.laptop.config);
    const candidate = db.prepare(`SELECT id, root_id AS "rootId", workspace, worker, priority, cohort, repo_key AS "repoKey", origin_host AS "originHost" FROM tasks WHERE id = ?`).get(id) as never;
    const limits = { perRoot: 64, perRepository: 16, fleet: 64 };
    const now = Date.now();
    fleet.laptop.write(() => registerRunner(db, 'ghost-lost', me, 4, 60_000, now));
    db.prepare(`UPDATE runners SET state = 'lost', ended_at = ? WHERE id = 'ghost-lost'`).run(now);
    fleet.laptop.write(() => registerRunner(db, 'ghost-expired', me, 4, 1, now - 10_000));
    expect(fleet.laptop.write(() => claimFleetTask(db, candidate, me, 'ghost-lost', limits))).toBe('lost');
    expect(fleet.laptop.write(() => claimFleetTask(db, candidate, me, 'ghost-expired', limits))).toBe('lost');
    expect(fleet.status(id).status).toBe('queued');
    // A live runner still claims it.
    fleet.laptop.write(() => registerRunner(db, 'live', me, 4, 60_000));
    expect(fleet.laptop.write(() => claimFleetTask(db, candidate, me, 'live', limits))).toBe('claimed');
  }, 60_000);
});
