import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/env.js';
import { exited, until } from '../helpers/procs.js';
import { makeFleetHosts, type FleetHosts } from '../helpers/fleet-hosts.js';
import { fleetWaitingFor } from '../../main/scheduler/fleet.js';
import { RETRY_STRATEGIES } from '../../main/tasks/ops.js';

/**
 * Infrastructure faults do not spend the user's budget: tasks orphaned because their runner was lost
 * (kill -9) are resumed by themselves — read-only kinds on any runner, an execute task only on the host
 * holding its worktree — and none of it counts against the tree's retry budget (default 3), so one
 * crashed runner holding 4 tasks of one tree leaves the tree finishable. With
 * `[scheduler] auto_resume_orphans = false` they wait for a manual retry, as before. A task that failed
 * through its own worker (its runner alive) is never resumed automatically.
 */
const url = process.env.LIGHTWORKER_TEST_PG_URL;
if (!url) throw new Error(`the fleet tests run in the postgres project (a test PostgreSQL): ${process.env.LIGHTWORKER_TEST_PG_SKIP ?? 'LIGHTWORKER_TEST_PG_URL unset'}`);

let t: ReturnType<typeof tempDir>;
let fleet: FleetHosts;

beforeAll(() => {
  t = tempDir('lw-autoresume-');
  fleet = makeFleetHosts(t.dir, url, { hosts: ['host-a', 'host-b'], autoResume: true });
});

afterAll(async () => {
  await fleet?.close();
  t?.cleanup();
});

const clone = () => join(t.dir, 'laptop', 'src', 'api');

async function submitTree(specs: { kind: 'explore' | 'execute'; mock: Record<string, unknown> }[]): Promise<string[]> {
  const tasks = specs.map((s, i) => ({
    objective: `api ${s.kind} ${i}`,
    workspace: clone(),
    kind: s.kind,
    ...(s.kind === 'execute' ? { mode: 'auto_execute' } : {}),
    metadata: { mock: { beat_log: fleet.beatLog, ...s.mock } },
  }));
  const r = (await fleet.call('delegate_batch', { tasks })) as { tasks: { id: string; rootId: string }[] };
  return r.tasks.map((x) => x.id);
}

function moves(id: string): { to: string; strategy?: string; attempt?: number }[] {
  return (fleet.laptop.db.prepare(`SELECT payload FROM events WHERE task_id = ? AND type = 'task.status' ORDER BY seq`).all(id) as { payload: string }[]).map((r) => JSON.parse(r.payload));
}

function retriesSpent(ids: string[]): number {
  return ids.flatMap(moves).filter((m) => (RETRY_STRATEGIES as readonly string[]).includes(m.strategy ?? '')).length;
}

function lastPlacedHost(id: string): string | null {
  const row = fleet.laptop.db.prepare(`SELECT payload FROM events WHERE task_id = ? AND type = 'fleet.placed' ORDER BY seq DESC LIMIT 1`).get(id) as { payload: string } | undefined;
  return row ? (JSON.parse(row.payload) as { host: string }).host : null;
}

function sessionOf(id: string): string | null {
  const row = fleet.laptop.db.prepare(`SELECT payload FROM events WHERE task_id = ? AND type = 'worker.started' ORDER BY seq DESC LIMIT 1`).get(id) as { payload: string } | undefined;
  return row ? (JSON.parse(row.payload) as { sessionId: string }).sessionId : null;
}

const statuses = (ids: string[]) => ids.map((id) => fleet.status(id).status);

async function stop(host: string): Promise<void> {
  const c = fleet.runners[host];
  if (c && c.exitCode === null && c.signalCode === null) {
    c.kill('SIGTERM');
    await exited(c);
  }
}

function setAutoResume(host: string, on: boolean): void {
  const file = join(fleet.homes[host], 'config.toml');
  const text = readFileSync(file, 'utf8').replace(/^auto_resume_orphans = .*\n/m, '');
  writeFileSync(file, `${text}auto_resume_orphans = ${on}\n`);
}

describe('automatic resume of tasks orphaned by a lost runner', () => {
  it('a task that fails through its own worker (its runner alive) is not resumed: a worker error, a worker killed by SIGKILL', async () => {
    fleet.start('host-b');
    const [failing, killed] = await submitTree([
      { kind: 'explore', mock: { fail_message: 'the model refused' } },
      { kind: 'explore', mock: { sleep_ms: 60_000 } },
    ]);
    await until(() => fleet.status(killed).status === 'running' && fleet.beats().some((b) => b.task === killed), 30_000, 'the long task to run');
    process.kill(fleet.beats().find((b) => b.task === killed)!.pid, 'SIGKILL');
    await until(() => statuses([failing, killed]).every((s) => s === 'failed'), 30_000, () => `both to fail: ${statuses([failing, killed])}`);
    // The runner goes on serving (a new task completes), and neither failed task moved again.
    const [later] = await fleet.submit(1, {});
    await until(() => fleet.status(later).status === 'completed', 30_000, 'a later task to complete');
    expect(statuses([failing, killed])).toEqual(['failed', 'failed']);
    expect([failing, killed].flatMap(moves).filter((m) => m.strategy === 'auto_resume')).toEqual([]);
    await stop('host-b');
  }, 90_000);

  it('kill -9 of a runner holding 4 tasks of one tree: they resume by themselves (execute ones on its host), complete, and the retry budget is untouched', async () => {
    fleet.start('host-a');
    const ids = await submitTree([
      { kind: 'explore', mock: { sleep_ms: 60_000, followup: { sleep_ms: 200 } } },
      { kind: 'explore', mock: { sleep_ms: 60_000, followup: { sleep_ms: 200 } } },
      { kind: 'execute', mock: { write_files: { 'one.txt': 'one\n' }, sleep_ms: 60_000, followup: { sleep_ms: 200, write_files: { 'one.txt': 'one\n' } } } },
      { kind: 'execute', mock: { write_files: { 'two.txt': 'two\n' }, sleep_ms: 60_000, followup: { sleep_ms: 200, write_files: { 'two.txt': 'two\n' } } } },
    ]);
    const [readA, readB, execA, execB] = ids;
    // Each worker's session is recorded (a resume continues it) before its runner dies.
    await until(() => ids.every((id) => fleet.status(id).status === 'running' && sessionOf(id) !== null), 30_000, () => `the 4 tasks to run on a: ${statuses(ids)}`);
    const lostRunner = fleet.runnerOf('host-a')!.id;
    expect(ids.every((id) => fleet.status(id).runnerId === lostRunner)).toBe(true);
    fleet.runners['host-a'].kill('SIGKILL');
    await exited(fleet.runners['host-a']);
    // Another host's runner finds a lost and resumes what can run anywhere; the execute tasks wait for host-a.
    fleet.start('host-b');
    await until(() => [readA, readB].every((id) => fleet.status(id).status === 'completed'), 30_000, () => `the read-only tasks to complete on b: ${statuses(ids)}\n${fleet.stderr['host-b']()}`);
    expect([readA, readB].map(lastPlacedHost)).toEqual(['host-b', 'host-b']);
    const [after] = await fleet.submit(1, {});
    await until(() => fleet.status(after).status === 'completed', 30_000, 'a later task to complete on b');
    expect(statuses([execA, execB])).toEqual(['queued', 'queued']);
    expect(fleetWaitingFor(fleet.laptop.db, execA)).toMatch(/worktree is on host host-a/);
    // A runner on the host that holds their worktrees continues them there.
    fleet.start('host-a');
    await until(() => [execA, execB].every((id) => fleet.status(id).status === 'completed'), 30_000, () => `the execute tasks to complete on a: ${statuses(ids)}\n${JSON.stringify(fleet.laptop.db.prepare('SELECT type, payload FROM events WHERE task_id = ? ORDER BY seq').all(execA), null, 1)}\n${fleet.stderr['host-a']()}`);
    expect([execA, execB].map(lastPlacedHost)).toEqual(['host-a', 'host-a']);
    for (const id of [execA, execB]) {
      const resumed = fleet.laptop.db.prepare(`SELECT payload FROM events WHERE task_id = ? AND type = 'task.resumed' ORDER BY seq DESC LIMIT 1`).get(id) as { payload: string };
      expect(JSON.parse(resumed.payload)).toMatchObject({ mode: 'session', interruptedBy: 'orphaned', keptWorktree: true });
    }
    for (const id of ids) {
      expect(fleet.status(id)).toMatchObject({ status: 'completed', attempt: 2 });
      expect(moves(id).filter((m) => m.to === 'orphaned')).toHaveLength(1);
      expect(moves(id).filter((m) => m.strategy === 'auto_resume')).toHaveLength(1);
    }
    // Not one retry of the tree's budget was spent, and no two attempts of a task ran at once.
    expect(retriesSpent(ids)).toBe(0);
    expect(fleet.overlaps()).toEqual([]);
  }, 120_000);

  it('with [scheduler] auto_resume_orphans = false, orphans wait for a manual retry, which spends the budget as before', async () => {
    await stop('host-a');
    await stop('host-b');
    setAutoResume('host-a', false);
    setAutoResume('host-b', false);
    fleet.start('host-a');
    const ids = await submitTree([
      { kind: 'explore', mock: { sleep_ms: 60_000, followup: { sleep_ms: 200 } } },
      { kind: 'explore', mock: { sleep_ms: 60_000, followup: { sleep_ms: 200 } } },
    ]);
    await until(() => ids.every((id) => fleet.status(id).status === 'running' && sessionOf(id) !== null), 30_000, () => `the tasks to run on a: ${statuses(ids)}`);
    fleet.runners['host-a'].kill('SIGKILL');
    await exited(fleet.runners['host-a']);
    fleet.start('host-b');
    await until(() => ids.every((id) => fleet.status(id).status === 'orphaned'), 30_000, () => `the tasks to be orphaned: ${statuses(ids)}`);
    const [after] = await fleet.submit(1, {});
    await until(() => fleet.status(after).status === 'completed', 30_000, 'a later task to complete on b');
    expect(statuses(ids)).toEqual(['orphaned', 'orphaned']);
    expect(ids.flatMap(moves).filter((m) => m.strategy === 'auto_resume')).toEqual([]);
    await fleet.call('retry_task', { id: ids[0], strategy: 'resume' });
    await until(() => fleet.status(ids[0]).status === 'completed', 30_000, 'the retried task to complete');
    expect(retriesSpent(ids)).toBe(1);
    expect(fleet.status(ids[1]).status).toBe('orphaned');
  }, 120_000);
});
