import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client as PgClient } from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../main/engine.js';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { startCli } from '../helpers/cli.js';
import { makeRepo, tempDir } from '../helpers/env.js';
import { captureStderr, exited, until } from '../helpers/procs.js';
import { connect, makeStatsDb, type StatsDb } from '../helpers/pg-stats.js';

/**
 * How the fleet's cost grows with its size: idle runners must not wake one another, and claims must not
 * queue behind one fleet-wide lock while the limits stay exact. Each test gets a database of its own on the
 * test server, so the server's counters (pg_stat_database) are that fleet's alone.
 */
const url = process.env.LIGHTWORKER_TEST_PG_URL;
if (!url) throw new Error(`the fleet tests run in the postgres project (a test PostgreSQL): ${process.env.LIGHTWORKER_TEST_PG_SKIP ?? 'LIGHTWORKER_TEST_PG_URL unset'}`);
const SCHEMA = 'fleet';

const t = tempDir('lw-fleet-scale-');
const origins = { api: makeRepo(join(t.dir, 'origin', 'api')), web: makeRepo(join(t.dir, 'origin', 'web')) };
let procs: { child: ChildProcess; stderr: () => string }[] = [];
let open: { stats: StatsDb; engine: Engine; clients: PgClient[] }[] = [];

interface Fleet {
  stats: StatsDb;
  /** The submitting home's engine (not a runner). */
  laptop: Engine;
  laptopClone: Record<string, string>;
  start(n: number): void;
}

async function makeFleet(opts: { scheduler?: Record<string, number>; fleet?: string; store?: string; leaseMs?: number } = {}): Promise<Fleet> {
  const scheduler = { max_concurrency: 4, per_root: 64, per_repository: 64, kill_grace_ms: 500, ...opts.scheduler };
  const stats = await makeStatsDb(url!, 'lw_scale');
  const base = join(t.dir, stats.name);
  let hosts = 0;
  const makeHome = (name: string) => {
    const home = join(base, name, 'home');
    mkdirSync(home, { recursive: true });
    const clones = Object.fromEntries(Object.entries(origins).map(([r]) => [r, join(base, name, r)]));
    for (const [r, dest] of Object.entries(clones)) execFileSync('git', ['clone', '-q', origins[r as keyof typeof origins], dest]);
    const repos = Object.entries(clones).map(([r, p]) => `"${r}" = "${p}"`).join(', ');
    writeFileSync(
      join(home, 'config.toml'),
      `[store]\nurl = "${stats.url}"\nschema = "${SCHEMA}"\n${opts.store ?? ''}[fleet]\nhost_id = "${name}"\nrepos = { ${repos} }\nlease_ttl_ms = ${opts.leaseMs ?? 2000}\n${opts.fleet ?? ''}` +
        `[scheduler]\n${Object.entries(scheduler).map(([k, v]) => `${k} = ${v}\n`).join('')}`,
    );
    return { home, clones };
  };
  const laptop = makeHome('laptop');
  const engine = new Engine({ home: laptop.home });
  open.push({ stats, engine, clients: [] });
  return {
    stats,
    laptop: engine,
    laptopClone: laptop.clones,
    start(n) {
      for (let i = 0; i < n; i++) {
        const { home } = makeHome(`runner-${++hosts}`);
        const child = startCli(['run'], { home });
        child.stdout?.resume();
        procs.push({ child, stderr: captureStderr(child) });
      }
    },
  };
}

async function stopRunners(): Promise<void> {
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
  await Promise.all(procs.map((p) => exited(p.child)));
  procs = [];
}

afterEach(async () => {
  // The test's own sessions first: a runner blocked behind one of them could not stop.
  for (const o of open) for (const c of o.clients) await c.end().catch(() => undefined);
  await stopRunners();
  for (const o of open) {
    o.engine.close();
    await o.stats.close();
  }
  open = [];
});

afterAll(() => t.cleanup());

/** Reads the test itself made in the fleet's database (each one a commit the server counts). */
let ownReads = 0;

/** Each runner's heartbeat count so far, read by a plain client (a read wakes nobody). */
async function beats(client: PgClient, seen: Map<string, { at: number; n: number }>): Promise<number> {
  ownReads++;
  const r = await client.query(`SELECT id, heartbeat_at FROM "${SCHEMA}".runners WHERE state = 'active'`);
  for (const row of r.rows as { id: string; heartbeat_at: string }[]) {
    const at = Number(row.heartbeat_at);
    const s = seen.get(row.id);
    if (!s) seen.set(row.id, { at, n: 0 });
    else if (s.at !== at) seen.set(row.id, { at, n: s.n + 1 });
  }
  return Math.min(...[...seen.values()].map((s) => s.n));
}

async function watchBeats(f: Fleet, runners: number): Promise<{ client: PgClient; seen: Map<string, { at: number; n: number }>; next: (k: number) => Promise<void> }> {
  const client = await connect(f.stats.url);
  open[open.length - 1].clients.push(client);
  const seen = new Map<string, { at: number; n: number }>();
  await until(async () => (await client.query(`SELECT COUNT(*)::int AS n FROM "${SCHEMA}".runners WHERE state = 'active'`)).rows[0].n === runners, 60_000, `${runners} runners to register`, 100);
  const next = async (k: number) => {
    const from = await beats(client, seen);
    await until(async () => (await beats(client, seen)) >= from + k, 60_000, `every runner to beat ${k} more times`, 20);
  };
  return { client, seen, next };
}

const totalBeats = (seen: Map<string, { n: number }>) => [...seen.values()].reduce((a, s) => a + s.n, 0);

describe('an idle fleet', () => {
  it('a heartbeat wakes no other runner: no notification while runners only renew their leases', async () => {
    const f = await makeFleet();
    f.laptop.close(); // the submitting engine listens and reads on every notification: not part of an idle fleet
    f.start(3);
    const w = await watchBeats(f, 3);
    await w.next(2); // past each runner's start-up (its sweeps and registration wake the others, as they should)
    const listener = await connect(f.stats.url);
    open[open.length - 1].clients.push(listener);
    let notified = 0;
    listener.on('notification', () => notified++);
    await listener.query(`LISTEN "lightworker_${SCHEMA}"`);
    await w.next(4);
    // A notification sent after the last beat seen has surely arrived once the listener answers a query.
    await listener.query('SELECT 1');
    expect(notified, 'notifications during 4 heartbeats of each of 3 idle runners').toBe(0);
  }, 180_000);

  it('idle commits per runner stay flat from 1 to 4 runners (the server counts them)', async () => {
    const perBeat = async (n: number): Promise<number> => {
      const f = await makeFleet();
      f.laptop.close();
      f.start(n);
      const w = await watchBeats(f, n);
      await w.next(3);
      const c0 = await f.stats.commits();
      const [b0, r0] = [totalBeats(w.seen), ownReads];
      await w.next(12);
      const commits = (await f.stats.commits()) - c0 - (ownReads - r0);
      const perRunnerBeat = commits / (totalBeats(w.seen) - b0);
      await stopRunners();
      return perRunnerBeat;
    };
    const one = await perBeat(1);
    const four = await perBeat(4);
    // Linear growth keeps the commits per runner heartbeat flat; each beat waking the 3 others made it
    // about twice as many.
    expect(four, `commits per runner heartbeat: 1 runner ${one.toFixed(2)}, 4 runners ${four.toFixed(2)}`).toBeLessThan(one * 1.4 + 1);
  }, 240_000);
});

/** Every session of the fleet's database (what it runs, what blocks it), for a timeout's message. */
function sessions(f: Fleet): string {
  const rows = f.laptop.db
    .prepare(`SELECT pid, pg_blocking_pids(pid)::text AS b, state, wait_event_type AS wt, wait_event AS we, left(query, 160) AS q FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
    .all() as Record<string, unknown>[];
  return rows.map((a) => Object.values(a).join(' ')).join('\n');
}

/** The most tasks active at once, per group, replayed from the event log (seq order is commit order for slots). */
function peaks(db: Engine['db'], groupOf: (id: string) => string[]): Map<string, number> {
  const ACTIVE = new Set(['starting', 'running', 'verifying']);
  const rows = db.prepare(`SELECT task_id AS "taskId", payload FROM events WHERE type = 'task.status' ORDER BY seq`).all() as { taskId: string; payload: string }[];
  const now = new Map<string, number>();
  const peak = new Map<string, number>();
  for (const r of rows) {
    const { from, to } = JSON.parse(r.payload) as { from: string; to: string };
    const d = (ACTIVE.has(to) ? 1 : 0) - (ACTIVE.has(from) ? 1 : 0);
    if (!d) continue;
    for (const g of groupOf(r.taskId)) {
      now.set(g, (now.get(g) ?? 0) + d);
      peak.set(g, Math.max(peak.get(g) ?? 0, now.get(g)!));
    }
  }
  return peak;
}

describe('claims across a fleet', () => {
  it('8 runners claiming at once never exceed the fleet, repository or root limit, and reach them', async () => {
    // 32 slots between the runners; the limits are far below.
    const f = await makeFleet({ fleet: 'max_concurrency = 5\n', scheduler: { per_root: 3, per_repository: 4 }, leaseMs: 15_000 });
    const batch = async (repo: 'api' | 'web', n: number) =>
      ((await runCommand(COMMANDS, { engine: f.laptop, face: 'cli', depth: 0 }, 'delegate_batch', {
        tasks: Array.from({ length: n }, (_, i) => ({ objective: `${repo} ${i}`, workspace: f.laptopClone[repo], metadata: { mock: { sleep_ms: 150 } } })),
      })) as { tasks: { id: string }[] }).tasks.map((x) => x.id);
    // One batch is one root: two roots on api, one on web.
    const roots = { a1: await batch('api', 12), a2: await batch('api', 12), w1: await batch('web', 12) };
    const all = Object.values(roots).flat();
    const group = new Map<string, string[]>();
    for (const [root, ids] of Object.entries(roots)) for (const id of ids) group.set(id, ['fleet', `repo:${root.startsWith('a') ? 'api' : 'web'}`, `root:${root}`]);
    f.start(8);
    const done = () => (f.laptop.db.prepare(`SELECT COUNT(*) AS n FROM tasks WHERE status = 'completed'`).get() as { n: number }).n;
    await until(() => done() === all.length, 180_000, () => `${all.length} tasks to complete (${done()} did)\n${sessions(f)}\n${procs.map((p) => p.stderr().slice(-300)).join('\n')}`, 100);
    const p = peaks(f.laptop.db, (id) => group.get(id) ?? []);
    const seen = Object.fromEntries(p);
    expect(seen.fleet, JSON.stringify(seen)).toBe(5);
    expect(Math.max(seen['repo:api'], seen['repo:web']), JSON.stringify(seen)).toBeLessThanOrEqual(4);
    for (const r of ['root:a1', 'root:a2', 'root:w1']) expect(seen[r], JSON.stringify(seen)).toBeLessThanOrEqual(3);
    // Each ran once: one placement per task.
    const placed = f.laptop.db.prepare(`SELECT COUNT(*) AS n, COUNT(DISTINCT task_id) AS d FROM events WHERE type = 'fleet.placed'`).get() as { n: number; d: number };
    expect(placed).toEqual({ n: all.length, d: all.length });
    // Nothing holds a slot once nothing runs.
    expect((f.laptop.db.prepare('SELECT COUNT(*) AS n FROM claim_slots WHERE task_id IS NOT NULL').get() as { n: number }).n).toBe(0);
  }, 240_000);

  it('a claim stalled inside its transaction holds up no other claim (there is no fleet-wide claim lock)', async () => {
    const f = await makeFleet({ leaseMs: 15_000 });
    // A claimer frozen mid-claim (a SIGSTOP, a long GC) holds what its transaction took: stood in for by a
    // session holding the fleet-wide claim lock runners took before, and a queued task's row.
    const stalled = await connect(f.stats.url);
    open[open.length - 1].clients.push(stalled);
    const submit = async (n: number) =>
      ((await runCommand(COMMANDS, { engine: f.laptop, face: 'cli', depth: 0 }, 'delegate_batch', {
        tasks: Array.from({ length: n }, (_, i) => ({ objective: `t ${i}`, workspace: f.laptopClone.api, metadata: { mock: {} } })),
      })) as { tasks: { id: string }[] }).tasks.map((x) => x.id);
    // The task the stalled claimer has taken (a root of its own), locked before any runner could claim it.
    const [held] = await submit(1);
    await stalled.query('BEGIN');
    await stalled.query(`SELECT pg_advisory_xact_lock(hashtext('${SCHEMA}' || '.claim'))`);
    await stalled.query(`SELECT id FROM "${SCHEMA}".tasks WHERE id = $1 AND status = 'queued' FOR UPDATE`, [held]);
    f.start(2);
    await until(() => (f.laptop.db.prepare(`SELECT COUNT(*) AS n FROM runners WHERE state = 'active'`).get() as { n: number }).n === 2, 60_000, 'runners to register');
    await submit(8);
    const completed = () => (f.laptop.db.prepare(`SELECT COUNT(*) AS n FROM tasks WHERE status = 'completed'`).get() as { n: number }).n;
    await until(() => completed() === 8, 60_000, () => `${sessions(f)}\n8 tasks to complete beside the stalled claim (${completed()} did)\n${procs.map((p) => p.stderr().slice(-600)).join('\n')}`, 100);
    await stalled.query('ROLLBACK');
    await until(() => completed() === 9, 60_000, 'the last task once the stalled claim let go', 100);
  }, 180_000);

  it('without LISTEN ([store] listen = false, as behind a transaction-mode pooler) runners poll: one connection each, and work still flows', async () => {
    const f = await makeFleet({ store: 'listen = false\n', leaseMs: 15_000 });
    f.laptop.close();
    f.start(2);
    const client = await connect(f.stats.url);
    open[open.length - 1].clients.push(client);
    await until(async () => (await client.query(`SELECT COUNT(*)::int AS n FROM "${SCHEMA}".runners WHERE state = 'active'`)).rows[0].n === 2, 60_000, 'runners to register', 100);
    const listening = await client.query(`SELECT COUNT(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'`);
    expect(listening.rows[0].n).toBe(0);
    expect(await f.stats.connections()).toBe(2);
    // Work submitted from another process reaches the polling runners and completes.
    const laptop = new Engine({ home: join(t.dir, f.stats.name, 'laptop', 'home') });
    open[open.length - 1].engine = laptop;
    const ids = ((await runCommand(COMMANDS, { engine: laptop, face: 'cli', depth: 0 }, 'delegate_batch', {
      tasks: Array.from({ length: 6 }, (_, i) => ({ objective: `p ${i}`, workspace: f.laptopClone.api, metadata: { mock: {} } })),
    })) as { tasks: { id: string }[] }).tasks;
    const done = () => (laptop.db.prepare(`SELECT COUNT(*) AS n FROM tasks WHERE status = 'completed'`).get() as { n: number }).n;
    await until(() => done() === ids.length, 90_000, () => `${ids.length} tasks to complete (${done()} did)\n${procs.map((p) => p.stderr().slice(-300)).join('\n')}`, 100);
  }, 180_000);
});
