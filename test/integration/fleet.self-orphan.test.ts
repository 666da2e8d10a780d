import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/env.js';
import { isAlive, until } from '../helpers/procs.js';
import { makeFleetHosts, type FleetHosts } from '../helpers/fleet-hosts.js';

/**
 * A runner frozen past its lease (SIGSTOP) whose spawner helper killed its workers, then woken: with nobody
 * else in the fleet to reap it first, the runner itself ends its tasks as `orphaned` (its fencing token
 * still matches). That loss is the infrastructure's, so the same automatic resume recovery applies happens
 * in that write — read-only kinds, an execute task pinned to this host, no retry budget spent — and both
 * tasks complete with no person retrying them. With `[scheduler] auto_resume_orphans = false` they wait. One runner only: nobody else can recover the tasks.
 */
const url = process.env.LIGHTWORKER_TEST_PG_URL;
if (!url) throw new Error(`the fleet tests run in the postgres project (a test PostgreSQL): ${process.env.LIGHTWORKER_TEST_PG_SKIP ?? 'LIGHTWORKER_TEST_PG_URL unset'}`);

let t: ReturnType<typeof tempDir>;
let fleet: FleetHosts;

beforeAll(() => {
  t = tempDir('lw-selforphan-');
  fleet = makeFleetHosts(t.dir, url, { hosts: ['host-a'], autoResume: true });
});

afterAll(async () => {
  for (const c of Object.values(fleet?.runners ?? {})) if (c.signalCode === null && c.exitCode === null) c.kill('SIGCONT');
  await fleet?.close();
  t?.cleanup();
});

function moves(id: string): string[] {
  return (fleet.laptop.db.prepare(`SELECT payload FROM events WHERE task_id = ? AND type = 'task.status' ORDER BY seq`).all(id) as { payload: string }[]).map((r) => {
    const p = JSON.parse(r.payload) as { to: string; strategy?: string };
    return p.strategy ? `${p.to}(${p.strategy})` : p.to;
  });
}

async function submitPair(): Promise<string[]> {
  const clone = join(t.dir, 'laptop', 'src', 'api');
  const mock = { beat_log: fleet.beatLog, sleep_ms: 4000 };
  const tasks = [
    { objective: 'api explore', workspace: clone, kind: 'explore', metadata: { mock } },
    { objective: 'api execute', workspace: clone, kind: 'execute', mode: 'auto_execute', metadata: { mock } },
  ];
  const r = (await fleet.call('delegate_batch', { tasks })) as { tasks: { id: string }[] };
  return r.tasks.map((x) => x.id);
}

/** Both tasks running on a's runner, frozen until its helper killed their workers, then woken. */
async function freezeUntilFenced(ids: string[]): Promise<void> {
  const a = fleet.runners['host-a'];
  await until(() => ids.every((id) => fleet.status(id).status === 'running' && fleet.beats().some((b) => b.task === id)), 30_000, () => `both to run: ${ids.map((id) => JSON.stringify(fleet.status(id))).join(' ')}`);
  const workers = ids.map((id) => fleet.beats().find((b) => b.task === id)!.pid);
  a.kill('SIGSTOP');
  try {
    await until(() => workers.every((pid) => !isAlive(pid)), 30_000, 'the frozen runner\'s helper to kill its workers (self-fence)');
    // Nobody reaped the runner meanwhile: its own write will be the one that ends the attempts.
    for (const id of ids) expect(fleet.status(id).status).toBe('running');
  } finally {
    a.kill('SIGCONT');
  }
}

describe('a runner that orphans its own tasks after fencing itself', () => {
  it('frozen past its lease and woken, alone in the fleet: its tasks resume by themselves and complete, the execute task on its host', async () => {
    fleet.start('host-a');
    const ids = await submitPair();
    await freezeUntilFenced(ids);
    for (const id of ids) {
      await until(() => fleet.status(id).status === 'completed', 60_000, () => `${id} to complete: ${JSON.stringify(fleet.status(id))} after ${moves(id).join(' ')}\n${fleet.stderr['host-a']()}`);
      expect(moves(id)).toContain('orphaned');
      expect(moves(id)).toContain('queued(auto_resume)');
      expect(fleet.status(id).attempt).toBe(2);
    }
    const resumed = fleet.laptop.db.prepare(`SELECT payload FROM events WHERE task_id = ? AND type = 'task.status' ORDER BY seq`).all(ids[1]) as { payload: string }[];
    expect(resumed.map((r) => JSON.parse(r.payload) as { runHost?: string }).find((p) => p.runHost)?.runHost).toBe('host-a');
  }, 120_000);

  it('with auto_resume_orphans off: they stay orphaned for a person', async () => {
    const file = join(fleet.homes['host-a'], 'config.toml');
    writeFileSync(file, readFileSync(file, 'utf8').replace(/^auto_resume_orphans = .*$/m, 'auto_resume_orphans = false'));
    const ids = await submitPair();
    await freezeUntilFenced(ids);
    for (const id of ids) {
      await until(() => fleet.status(id).status === 'orphaned', 30_000, () => `${id} orphaned: ${JSON.stringify(fleet.status(id))} after ${moves(id).join(' ')}`);
    }
    // The runner is healthy again (it joined under a new id) and left them alone.
    await until(() => fleet.runnerOf('host-a')?.state === 'active', 30_000, 'a to join again');
    for (const id of ids) {
      expect(fleet.status(id).status).toBe('orphaned');
      expect(moves(id)).not.toContain('queued(auto_resume)');
    }
  }, 120_000);
});
