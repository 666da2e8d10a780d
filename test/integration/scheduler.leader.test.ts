import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Engine } from '../../main/engine.js';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { startCli, runCli } from '../helpers/cli.js';
import { makeRepo, tempDir, withTestStore } from '../helpers/env.js';
import { connectHome } from '../helpers/store-dump.js';
import { captureStderr, exited, isAlive, until } from '../helpers/procs.js';
import { STATUSES } from '../../main/tasks/types.js';
import type { Db } from '../../main/store/db.js';

let t: ReturnType<typeof tempDir>;
let home: string;
let repo: string;
let log: string;
const children: ReturnType<typeof startCli>[] = [];
let storeDb: Db | null = null;
/** One connection to the home's store (SQLite file or PostgreSQL schema) for the test's reads. */
const store = (): Db => (storeDb ??= connectHome(home));

beforeEach(() => {
  t = tempDir();
  home = join(t.dir, 'home');
  repo = makeRepo(join(t.dir, 'repo'));
  log = join(t.dir, 'runs.log');
  // Fast takeover and kills keep the test short; the behaviour is the same at the defaults.
  withTestStore(home, '[scheduler]\nlease_ttl_ms = 1500\nkill_grace_ms = 500\nmax_concurrency = 4\nper_root = 4\nper_repository = 4\nauto_resume_orphans = false\n');
  new Engine({ home }).close();
});
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.exitCode === null) c.kill('SIGKILL');
  }
  storeDb?.close();
  storeDb = null;
  t.cleanup();
});

async function submit(n: number, mock: Record<string, unknown>): Promise<string[]> {
  const engine = new Engine({ home });
  try {
    const r = (await runCommand(COMMANDS, { engine, face: 'cli', depth: 0 }, 'delegate_batch', {
      tasks: Array.from({ length: n }, (_, i) => ({ objective: `task ${i}`, workspace: repo, metadata: { mock: { append_log: log, ...mock } } })),
    })) as { tasks: { id: string }[] };
    return r.tasks.map((x) => x.id);
  } finally {
    engine.close();
  }
}

function logLines(): { task: string; attempt: string; pid: number }[] {
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8').trim().split('\n').filter(Boolean).map((l) => {
    const [task, attempt, pid] = l.split(' ');
    return { task, attempt, pid: Number(pid) };
  });
}

function statuses(ids: string[]): Record<string, string> {
  const db = store();
  return Object.fromEntries(ids.map((id) => [id, (db.prepare('SELECT status FROM tasks WHERE id = ?').get(id) as { status: string }).status]));
}

function leaderChanges(): number {
  const db = store();
  return (db.prepare(`SELECT COUNT(*) AS n FROM events WHERE type = 'scheduler.leader'`).get() as { n: number }).n;
}

/** PIDs of the grandchildren the mock workers spawned (reported as worker.tool events). */
function grandchildPids(ids: string[]): number[] {
  const db = store();
  const rows = db.prepare(`SELECT task_id, payload FROM events WHERE type = 'worker.tool'`).all() as { task_id: string; payload: string }[];
  return rows.filter((r) => ids.includes(r.task_id)).map((r) => JSON.parse(r.payload)).filter((p) => p.name === 'spawn').map((p) => Number(p.output));
}

function expectRanOnce(ids: string[]): void {
  const lines = logLines();
  const keys = lines.map((l) => `${l.task}#${l.attempt}`);
  expect(new Set(keys).size, `a task attempt ran twice: ${keys.join(', ')}`).toBe(keys.length);
  for (const l of lines) expect(ids).toContain(l.task);
}

describe('one leader per home', () => {
  for (const n of [2, 8]) {
    it(`${n} competing \`lightworker run\` processes: one leader, no task run twice`, async () => {
      const ids = await submit(24, { sleep_ms: 100 });
      const procs = Array.from({ length: n }, () => startCli(['run', '--until-idle'], { home }));
      children.push(...procs);
      const codes = await Promise.all(procs.map(exited));
      expect(codes.every((c) => c === 0)).toBe(true);
      expect(Object.values(statuses(ids)).every((s) => s === 'completed')).toBe(true);
      expectRanOnce(ids);
      expect(logLines()).toHaveLength(ids.length);
      // Nobody died, so leadership was taken once and never contested.
      expect(leaderChanges()).toBeGreaterThanOrEqual(1);
      const runners = store().prepare('SELECT DISTINCT runner_id FROM attempts').all();
      expect(runners.length).toBeLessThanOrEqual(leaderChanges());
    });
  }

  it('a second run while one leads says so and waits as standby', async () => {
    await submit(2, { sleep_ms: 6000 });
    const a = startCli(['run', '--until-idle'], { home });
    children.push(a);
    const aErr = captureStderr(a);
    await until(() => logLines().length > 0, 30_000, 'the leader to start a task');
    const b = startCli(['run', '--until-idle'], { home });
    children.push(b);
    const bErr = captureStderr(b);
    await until(() => /another process leads this home/.test(bErr()), 20_000, 'standby notice');
    expect(await exited(a)).toBe(0);
    expect(await exited(b)).toBe(0);
    expect(aErr()).not.toMatch(/Error|at /);
    expect(bErr()).not.toMatch(/\n\s+at /);
  });
});

describe('crash recovery', () => {
  it('kill -9 of the leader mid-run, repeatedly: takeover kills the old workers, orphans their tasks, runs nothing twice', async () => {
    const allIds: string[] = [];
    for (let round = 0; round < 3; round++) {
      const ids = await submit(6, { sleep_ms: 30_000, grandchild: true });
      allIds.push(...ids);
      const leader = startCli(['run'], { home });
      children.push(leader);
      await until(() => logLines().filter((l) => ids.includes(l.task)).length >= 2, 30_000, 'workers to start');
      // A random point: shortly after workers start.
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 400)));
      const standby = startCli(['run'], { home });
      children.push(standby);
      await new Promise((r) => setTimeout(r, 200));
      const running = () => logLines().filter((l) => ids.includes(l.task));
      await until(() => grandchildPids(running().map((l) => l.task)).length >= running().length, 10_000, 'grandchildren to be reported');
      const started = running();
      const workerPids = [...started.map((l) => l.pid), ...grandchildPids(started.map((l) => l.task))];
      leader.kill('SIGKILL');
      await exited(leader);
      // The standby takes over within the lease (1.5 s here) and kills the dead leader's workers.
      await until(() => { const st = statuses(started.map((l) => l.task)); return Object.values(st).every((s) => s === 'orphaned'); }, 10_000, 'takeover to orphan the old tasks');
      await until(() => workerPids.every((p) => !isAlive(p)), 10_000, 'old workers to die');
      // Cancel what the new leader started, then stop it cleanly.
      const st = statuses(ids);
      for (const s of Object.values(st)) expect(STATUSES).toContain(s);
      const r = await runCli(['cancel', ...Object.entries(st).filter(([, s]) => ['queued', 'starting', 'running'].includes(s)).map(([id]) => id)], { home });
      expect(r.code, r.stderr).toBe(0);
      await until(() => Object.values(statuses(ids)).every((s) => ['orphaned', 'cancelled', 'completed'].includes(s)), 20_000, 'all tasks to end');
      standby.kill('SIGTERM');
      await exited(standby);
      expectRanOnce(allIds);
    }
    // Every grandchild (which ignores SIGTERM) is gone too: no process of any worker survives.
    const { execFileSync } = await import('node:child_process');
    const ps = execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' });
    expect(ps).not.toContain(log);
  });
});
